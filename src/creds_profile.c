/* creds_profile: not written yet. */
typedef int lockfs_placeholder_creds_profile;
