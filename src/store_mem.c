/* store_mem: not written yet. */
typedef int lockfs_placeholder_store_mem;
