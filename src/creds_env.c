/* creds_env: not written yet. */
typedef int lockfs_placeholder_creds_env;
