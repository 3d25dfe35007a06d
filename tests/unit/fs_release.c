/* fs_release: unlink with -o release=async, without FUSE: two mounts on
 * one in-memory store, A answering unlink before its delete
 * (fs_unlink_start) and B an ordinary mount. What A's callers see between
 * the answer and the delete (the name gone, their lookups and creates
 * waiting for the delete), what B sees (the lock, until the delete), and
 * that the delete then frees the key for both.
 *
 * Threads: the test's, and one that looks the name up while the delete is
 * pending. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fs.h"
#include "fs_mount.h"
#include "log.h"
#include "store_mem.h"

static struct store *st;

static const struct fs_ctx user_ctx = { 1000, 1000, 1 };

static int create(struct fs_mount *mt, const char *name, uint64_t *fh)
{
	return fs_mount_create(mt, &user_ctx, FS_ROOT_INO, name, 0640,
			       O_CREAT | O_EXCL, fh);
}

struct waiter {
	struct fs_mount *mt;
	const char *name;
	bool create;
	int rc;
	uint64_t fh;
	atomic_bool done;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct fs_entry e;

	w->rc = w->create ? create(w->mt, w->name, &w->fh)
			  : fs_lookup(w->mt->fs, FS_ROOT_INO, w->name, &e);
	atomic_store(&w->done, true);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A caller of A that looks the name up (or creates it again) while A's
 * delete is pending waits for the delete, then sees the name free. */
static void check_pending(struct fs_mount *a, struct fs_mount *b,
			  const char *name, bool again)
{
	struct waiter w = { .mt = a, .name = name, .create = again };
	struct lock *later = NULL;
	struct fs_entry e;
	pthread_t t;
	uint64_t fa, fb;
	int i;

	CHECK_INT(create(a, name, &fa), 0);
	CHECK_INT(fs_unlink_start(a->fs, &user_ctx, FS_ROOT_INO, name, &later),
		  0);
	CHECK(later != NULL);
	/* Answered, not yet deleted: the row is still there, so B is
	 * refused (DynamoDB decides), and B's lookup shows the lock. */
	CHECK_INT(store_mem_lock_count(st), 1);
	CHECK_INT(create(b, name, &fb), -EEXIST);
	CHECK_INT(fs_lookup(b->fs, FS_ROOT_INO, name, &e), 0);
	/* A's own caller waits for the outcome. */
	CHECK_INT(pthread_create(&t, NULL, wait_thread, &w), 0);
	sleep_ms(100);
	CHECK(!atomic_load(&w.done));
	fs_unlink_finish(a->fs, later);
	for (i = 0; i < 500 && !atomic_load(&w.done); i++)
		sleep_ms(10);
	CHECK(atomic_load(&w.done));
	pthread_join(t, NULL);
	if (again) {
		/* The create after the release acquired anew. */
		CHECK_INT(w.rc, 0);
		CHECK_INT(store_mem_lock_count(st), 1);
		CHECK_INT(fs_unlink(a->fs, &user_ctx, FS_ROOT_INO, name), 0);
		fs_release(a->fs, w.fh);
	} else {
		CHECK_INT(w.rc, -ENOENT);
	}
	fs_release(a->fs, fa);
	CHECK_INT(store_mem_lock_count(st), 0);
	/* The key is free for B. */
	CHECK_INT(create(b, name, &fb), 0);
	CHECK_INT(fs_unlink(b->fs, &user_ctx, FS_ROOT_INO, name), 0);
	fs_release(b->fs, fb);
}

static void test_lookup_waits(struct fs_mount *a, struct fs_mount *b)
{
	check_pending(a, b, "job1", false);
}

static void test_create_waits(struct fs_mount *a, struct fs_mount *b)
{
	check_pending(a, b, "job2", true);
}

/* Refusals are answered at once, as with release=sync: nothing is left
 * to do after the answer. */
static void test_refusals(struct fs_mount *a, struct fs_mount *b)
{
	struct fs_ctx other = { 2000, 2000, 1 };
	struct lock *later = NULL;
	uint64_t fa, fb;

	CHECK_INT(
		fs_unlink_start(a->fs, &user_ctx, FS_ROOT_INO, "none", &later),
		-ENOENT);
	CHECK(later == NULL);
	CHECK_INT(create(b, "theirs", &fb), 0);
	CHECK_INT(fs_unlink_start(a->fs, &user_ctx, FS_ROOT_INO, "theirs",
				  &later),
		  -EPERM);
	CHECK(later == NULL);
	CHECK_INT(create(a, "mine", &fa), 0);
	CHECK_INT(fs_unlink_start(a->fs, &other, FS_ROOT_INO, "mine", &later),
		  -EPERM);
	CHECK(later == NULL);
	CHECK_INT(fs_unlink(a->fs, &user_ctx, FS_ROOT_INO, "mine"), 0);
	CHECK_INT(fs_unlink(b->fs, &user_ctx, FS_ROOT_INO, "theirs"), 0);
	fs_release(a->fs, fa);
	fs_release(b->fs, fb);
	CHECK_INT(store_mem_lock_count(st), 0);
}

/* Whether mt's status file holds want. */
static bool status_has(struct fs_mount *mt, const char *want)
{
	char text[4096];
	uint64_t fh;
	ssize_t n;

	CHECK_INT(fs_open(mt->fs, &user_ctx, FS_CTL_STATUS_INO, O_RDONLY, &fh),
		  0);
	n = fs_read(mt->fs, fh, text, sizeof(text) - 1, 0);
	CHECK(n > 0);
	text[n > 0 ? n : 0] = '\0';
	fs_release(mt->fs, fh);
	return strstr(text, want) != NULL;
}

/* The status file says which answer unlink gives. */
static void test_status(struct fs_mount *a, struct fs_mount *b)
{
	CHECK(status_has(a, "\nrelease: async\n"));
	CHECK(status_has(b, "\nrelease: sync\n"));
}

int main(int argc, char **argv)
{
	struct fs_config fc = fs_mount_config();
	struct fs_mount a, b;

	log_setup(LOGL_ERR, false, NULL);
	st = store_mem_new();
	check_cases(argc, argv);
	fc.release_async = true;
	fs_mount_init(&a, st, "A", &fc);
	fc.release_async = false;
	fs_mount_init(&b, st, "B", &fc);
	CHECK_CASE(test_lookup_waits, &a, &b);
	CHECK_CASE(test_create_waits, &a, &b);
	CHECK_CASE(test_refusals, &a, &b);
	CHECK_CASE(test_status, &a, &b);
	fs_mount_fini(&a);
	fs_mount_fini(&b);
	store_free(st);
	CHECK_DONE();
}
