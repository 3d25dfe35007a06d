/* store: what the store interface (store.h) owns besides its operations:
 * the result of a lookup. record.h knows nothing of the store; the store
 * interface uses records (one way). Threads: any (no state). */
#include "store.h"

#include <string.h>

void store_lookup_init(struct store_lookup *l)
{
	memset(l, 0, sizeof(*l));
}

void store_lookup_fini(struct store_lookup *l)
{
	record_fini(&l->lock);
	dir_record_fini(&l->dir);
	store_lookup_init(l);
}
