/* store_mem_session: the session items of the in-memory store
 * (store.h's create/beat/get/fence/end_session), as a list the store owns.
 * Every function is called with the store's mutex held (store_mem.c), so
 * this file has no lock of its own. */
#ifndef LOCKFS_TEST_STORE_MEM_SESSION_H
#define LOCKFS_TEST_STORE_MEM_SESSION_H

#include "store.h"

struct mem_session;

int mem_session_create(struct mem_session **list, const char *key,
		       const char *rvn, int64_t lease_ms);
int mem_session_beat(struct mem_session *list, const char *key,
		     const char *expect_rvn, const char *new_rvn, int64_t hb_ms,
		     struct session_record *cur, bool *has_cur);
int mem_session_get(struct mem_session *list, const char *key,
		    struct session_record *out);
int mem_session_fence(struct mem_session **list, const char *key,
		      const char *observed_rvn);
int mem_session_end(struct mem_session **list, const char *key,
		    const char *expect_rvn);
/* What another client (or an operator) would do: removes key's item. */
int mem_session_delete(struct mem_session **list, const char *key);
void mem_session_free_all(struct mem_session **list);

#endif
