/* sigv4: not written yet. */
typedef int lockfs_placeholder_sigv4;
