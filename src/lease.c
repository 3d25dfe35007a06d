/* lease: not written yet. */
typedef int lockfs_placeholder_lease;
