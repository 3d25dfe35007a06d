/* creds_imds: not written yet. */
typedef int lockfs_placeholder_creds_imds;
