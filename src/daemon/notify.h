/* notify: kernel notifications from lockfs to FUSE: poll wake-ups of
 * holders whose lock was lost. lockfs sends no cache invalidations: no
 * other owner's lock name is cached by the kernel (entry timeout 0), a
 * name of our own is kept without its attributes, so that every stat of it
 * asks us (fs_int_fill_entry), and an invalidation waits for the directory's
 * lock in the kernel, which a create waiting for the daemon may hold (a killed
 * daemon's thread then never dies). */
#ifndef LOCKFS_NOTIFY_H
#define LOCKFS_NOTIFY_H

/* fs_config.poll_notify and poll_destroy. */
void notify_poll_wake(void *ph);
void notify_poll_destroy(void *ph);

#endif
