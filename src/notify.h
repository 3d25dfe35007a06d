/* notify: kernel notifications from lockfs to FUSE. Cache invalidations
 * are queued and sent by a thread of their own, never from inside a request
 * handler (libfuse documents the deadlock). Poll wake-ups go directly. */
#ifndef LOCKFS_NOTIFY_H
#define LOCKFS_NOTIFY_H

#include <stdint.h>

struct fuse_session;
struct notify;

struct notify *notify_new(void);
/* The session to notify; set before notify_start. */
void notify_attach(struct notify *n, struct fuse_session *se);
int notify_start(struct notify *n);
/* Stops the thread (dropping what is queued) and frees. Accepts NULL. */
void notify_free(struct notify *n);
/* Queues "forget the kernel's entry for name in directory parent". The
 * queue is bounded; when it is full the oldest entries are dropped (the
 * entry then simply expires by its timeout). Matches fs_config.inval_entry. */
void notify_inval_entry(void *n, uint64_t parent, const char *name);
/* fs_config.poll_notify and poll_destroy. */
void notify_poll_wake(void *ph);
void notify_poll_destroy(void *ph);

#endif
