/* store_mem_session: the in-memory store's session items: a singly linked
 * list of (key, version, live or dead, lease), with the conditions of the
 * DynamoDB store (src/store/store_ddb_session.c). Called with the store's
 * mutex held (store_mem.c), from any thread. */
#include "store_mem_session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

struct mem_session {
	struct mem_session *next;
	char *key;
	struct session_record rec;
};

static struct mem_session **find(struct mem_session **list, const char *key)
{
	while (*list && strcmp((*list)->key, key))
		list = &(*list)->next;
	return list;
}

static int add(struct mem_session **list, const char *key, const char *rvn,
	       bool dead, int64_t lease_ms)
{
	struct mem_session *ms = calloc(1, sizeof(*ms));

	if (!ms || !(ms->key = strdup(key))) {
		free(ms);
		return -ENOMEM;
	}
	text_copy(ms->rec.rvn, sizeof(ms->rec.rvn), rvn);
	ms->rec.dead = dead;
	ms->rec.lease_ms = lease_ms;
	ms->next = *list;
	*list = ms;
	return 0;
}

static void drop(struct mem_session **pp)
{
	struct mem_session *ms = *pp;

	*pp = ms->next;
	free(ms->key);
	free(ms);
}

int mem_session_create(struct mem_session **list, const char *key,
		       const char *rvn, int64_t lease_ms)
{
	if (*find(list, key))
		return -EEXIST;
	return add(list, key, rvn, false, lease_ms);
}

int mem_session_beat(struct mem_session *list, const char *key,
		     const char *expect_rvn, const char *new_rvn, int64_t hb_ms,
		     struct session_record *cur, bool *has_cur)
{
	struct mem_session *ms = *find(&list, key);

	if (ms && !ms->rec.dead && !strcmp(ms->rec.rvn, expect_rvn)) {
		text_copy(ms->rec.rvn, sizeof(ms->rec.rvn), new_rvn);
		ms->rec.heartbeat_real_ms = hb_ms;
		return 0;
	}
	if (has_cur)
		*has_cur = ms != NULL;
	if (ms && cur)
		*cur = ms->rec;
	return -ECANCELED;
}

int mem_session_get(struct mem_session *list, const char *key,
		    struct session_record *out)
{
	struct mem_session *ms = *find(&list, key);

	if (!ms)
		return -ENOENT;
	*out = ms->rec;
	return 0;
}

int mem_session_fence(struct mem_session **list, const char *key,
		      const char *observed_rvn)
{
	struct mem_session *ms = *find(list, key);

	if (!observed_rvn)
		return ms ? -ECANCELED : add(list, key, "-", true, 0);
	if (!ms || strcmp(ms->rec.rvn, observed_rvn))
		return -ECANCELED;
	ms->rec.dead = true;
	return 0;
}

int mem_session_end(struct mem_session **list, const char *key,
		    const char *expect_rvn)
{
	struct mem_session **pp = find(list, key);

	if (!*pp || strcmp((*pp)->rec.rvn, expect_rvn))
		return -ECANCELED;
	drop(pp);
	return 0;
}

int mem_session_delete(struct mem_session **list, const char *key)
{
	struct mem_session **pp = find(list, key);

	if (!*pp)
		return -ENOENT;
	drop(pp);
	return 0;
}

void mem_session_free_all(struct mem_session **list)
{
	while (*list)
		drop(list);
}
