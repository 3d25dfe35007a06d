/* ctl: not written yet. */
typedef int lockfs_placeholder_ctl;
