/* session_view: what this mount last read of session items (other
 * mounts' sessions, judged by the observer side of lock_rows), so that a
 * listing of many rows naming one session reads that item once, not once
 * a row. A stale entry can only delay a takeover, never allow one: the
 * fence is a conditional write on the version observed. Bounded (cleared
 * when full). Thread-safe. */
#ifndef LOCKFS_SESSION_VIEW_H
#define LOCKFS_SESSION_VIEW_H

#include <stdint.h>

#include "store.h"

struct session_view;

struct session_view *session_view_new(void);
void session_view_free(struct session_view *v);
/* The last read of key, if made at or after since_mono_ms: 0 with *out,
 * -ENOENT (there was no item), or -EAGAIN (no read that recent). */
int session_view_get(struct session_view *v, const char *key,
		     int64_t since_mono_ms, struct session_record *out);
/* Records a read of key made at read_mono_ms: sr, or none (absent). */
void session_view_put(struct session_view *v, const char *key,
		      int64_t read_mono_ms, const struct session_record *sr);
void session_view_forget(struct session_view *v, const char *key);

#endif
