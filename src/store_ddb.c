/* store_ddb: not written yet. */
typedef int lockfs_placeholder_store_ddb;
