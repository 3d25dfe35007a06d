/* core_share: shared locks. The in-memory store keeps the conditions of
 * shared rows that store_ddb keeps in DynamoDB (store_share_checks.h, run
 * on both), directly and through store_fault. */
#include <errno.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"
#include "store_share_checks.h"

static void test_store_rows(void)
{
	struct store *mem = store_mem_new();
	struct store_fault sf;

	CHECK(mem);
	store_share_checks(mem, "direct/");
	store_fault_init(&sf, mem);
	store_share_checks(&sf.base, "wrapped/");
	store_free(mem);
}

int main(void)
{
	log_setup(LOGL_ERR, false, NULL);
	test_store_rows();
	CHECK_DONE();
}
