/* creds: not written yet. */
typedef int lockfs_placeholder_creds;
