/* awsxml: not written yet. */
typedef int lockfs_placeholder_awsxml;
