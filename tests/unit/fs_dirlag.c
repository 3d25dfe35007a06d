/* fs_dirlag: a listing that lags behind the writes, as a Query of the
 * table's eventually consistent index can (store_fault_freeze_list over
 * store_mem), still shows this mount's own locks at once and not the ones
 * it just released, as its lookups answer: a lock acquired after the
 * listing's view was taken is listed (from the engine, as ours), one
 * released after it is not, and another mount's lock the view does not
 * have yet is simply not there (a moment old, never invented). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fs_mount.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

static const struct fs_ctx ctx = { 1000, 1000, 1 };

/* Whether name is in the listing of the root, and as ours (0644 file). */
static bool listed(struct fs_mount *mt, const char *want)
{
	const char *name;
	struct fs_entry e;
	uint64_t dh;
	bool found = false;

	CHECK_INT(fs_opendir(mt->fs, FS_ROOT_INO, &dh), 0);
	for (size_t i = 2;
	     fs_readdir_entry(mt->fs, dh, i, true, &name, &e) == 0; i++) {
		if (!strcmp(name, want)) {
			found = true;
			CHECK(S_ISREG(e.attr.mode));
		}
		fs_forget(mt->fs, e.attr.ino, 1);
	}
	fs_releasedir(mt->fs, dh);
	return found;
}

static void test_own_acquire_shows(struct store_fault *lag, struct fs_mount *a,
				   struct fs_mount *b)
{
	uint64_t fh, fhb;

	CHECK_INT(store_fault_freeze_list(lag), 0);
	CHECK_INT(fs_mount_create(a, &ctx, FS_ROOT_INO, "mine", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	CHECK_INT(fs_mount_create(b, &ctx, FS_ROOT_INO, "theirs", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fhb),
		  0);
	CHECK(listed(a, "mine"));
	CHECK(!listed(a, "theirs")); /* not in the view yet: a moment old */
	store_fault_thaw_list(lag);
	CHECK(listed(a, "theirs"));
	CHECK(listed(a, "mine"));
	fs_release(a->fs, fh); /* hold=fd: released */
	fs_release(b->fs, fhb);
}

static void test_own_release_hidden(struct store_fault *lag, struct fs_mount *a)
{
	uint64_t fh;

	CHECK_INT(fs_mount_create(a, &ctx, FS_ROOT_INO, "gone", 0644,
				  O_CREAT | O_EXCL | O_RDONLY, &fh),
		  0);
	CHECK_INT(store_fault_freeze_list(lag), 0);
	fs_release(a->fs, fh);	   /* hold=fd: released */
	CHECK(!listed(a, "gone")); /* the view still has it: not shown */
	store_fault_thaw_list(lag);
	CHECK(!listed(a, "gone"));
}

int main(int argc, char **argv)
{
	struct fs_config fc = fs_mount_config();
	struct store_fault lag;
	struct fs_mount a, b;
	struct store *mem;

	log_setup(LOGL_ERR, false, NULL);
	mem = store_mem_new();
	CHECK(mem);
	store_fault_init(&lag, mem);
	fs_mount_init(&a, &lag.base, "A", &fc);
	fs_mount_init(&b, mem, "B", &fc);
	check_cases(argc, argv);
	CHECK_CASE(test_own_acquire_shows, &lag, &a, &b);
	CHECK_CASE(test_own_release_hidden, &lag, &a);
	fs_mount_fini(&a);
	fs_mount_fini(&b);
	store_fault_thaw_list(&lag);
	store_free(mem);
	CHECK_DONE();
}
