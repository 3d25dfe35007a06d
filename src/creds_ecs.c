/* creds_ecs: not written yet. */
typedef int lockfs_placeholder_creds_ecs;
