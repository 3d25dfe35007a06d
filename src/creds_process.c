/* creds_process: not written yet. */
typedef int lockfs_placeholder_creds_process;
