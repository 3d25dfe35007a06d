/* lockfs_ioctl: the ioctls a lock file of a lockfs mount answers, shared
 * by the daemon (src/daemon/fsops.c) and its clients (lockfs-run). No
 * state, no threads. */
#ifndef LOCKFS_IOCTL_H
#define LOCKFS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

/* How long the lock this open file holds stays trusted from now without
 * another confirmed heartbeat: an int64_t of milliseconds of the host's
 * CLOCK_BOOTTIME, 0 once it is not trusted (lost, released). ENODATA when
 * the file holds no lock of this mount; ENOTTY elsewhere. Answered from
 * the daemon's memory, never by a request to DynamoDB: a supervisor that
 * asked at t and got ms may trust the lock until t + ms on its own clock,
 * and no longer without a newer answer, so that its trust ends by the
 * clock even when the daemon is stopped and can tell it nothing. */
#define LOCKFS_IOC_TRUST_MS _IOR('L', 1, int64_t)

#endif
