/* creds_webid: not written yet. */
typedef int lockfs_placeholder_creds_webid;
