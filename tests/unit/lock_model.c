/* lock_model: random operation sequences against three lock engines (three
 * "hosts", each on a fake machine) sharing one in-memory store, each behind
 * its own link (store_fault) that can be cut (partition) or lose replies
 * after the write landed. Hosts also
 * crash (the daemon dies without releasing) and come back with a new owner.
 * Every request over a link takes time on the shared clock. After every
 * step two properties are checked:
 *   safety: for every key, at most one host's engine reports the lock held
 *           (the state it reports, not one the test recomputes);
 *   fences: tokens handed to successive holders of a key strictly increase.
 * A fixed seed per run keeps failures reproducible; the seed is printed. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "host_fake.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "store_fault.h"
#include "store_mem.h"

#define HOSTS	     3
#define KEYS	     4
#define STEPS	     20000
#define LEASE_MS     2000
#define HEARTBEAT_MS 400
#define SAFE_MS	     1500

/* Each request over a host's link takes up to this long on the shared
 * clock, so that a lease path busy with one request shows. */
#define LINK_MS 80

static struct clk_fake fclk;
static uint64_t rnd(uint64_t n);

/* A mount: its engine on its own machine (a fake host: the shared clock,
 * no real process groups) behind its own link to the shared store
 * (store_fault), which can be cut (down) or lose replies after the write
 * landed, and takes time on the shared clock. */
struct mount {
	struct host_fake machine;
	struct store_fault link;
	struct observe *obs;
	struct lock_engine *eng;
	struct lock *held[KEYS]; /* our references, or NULL */
	uint64_t held_id[KEYS];	 /* which acquisition it was */
	int generation;
	char owner[32];
};

static struct store *shared;
static struct mount hosts[HOSTS];
static const char *const keys[KEYS] = { "a", "b", "c", "d/e" };
static uint64_t last_fence[KEYS];
static uint64_t last_fence_id[KEYS]; /* acquisition that got it */
static uint64_t acquisitions;
static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

static void host_up(struct mount *h, int i)
{
	struct lock_config cfg = {
		.host = "model",
		.lease_ms = LEASE_MS,
		.heartbeat_ms = HEARTBEAT_MS,
		.safe_period_ms = SAFE_MS,
		.hold = HOLD_UNLINK,
		.op_timeout_ms = 1000,
	};

	snprintf(h->owner, sizeof(h->owner), "host%d.%d", i, h->generation++);
	cfg.owner = h->owner;
	host_fake_init(&h->machine, &fclk.clk);
	store_fault_init(&h->link, shared);
	store_fault_set_latency(&h->link, &fclk, LINK_MS, rnd);
	h->obs = observe_new(&fclk.clk, 0);
	h->eng = lock_engine_new_host(&cfg, &h->link.base, h->obs,
				      &h->machine.host, NULL, NULL);
	CHECK(h->obs && h->eng);
	memset(h->held, 0, sizeof(h->held));
}

/* The daemon dies: nothing is released, its rows stay behind. */
static void host_crash(struct mount *h, int i)
{
	int k;

	for (k = 0; k < KEYS; k++)
		if (h->held[k])
			lock_unref(h->eng, h->held[k]);
	lock_engine_free(h->eng);
	observe_free(h->obs);
	host_fake_fini(&h->machine);
	host_up(h, i);
}

static void settle(void)
{
	int i, n;

	for (i = 0; i < HOSTS; i++)
		for (n = 0; n < 200; n++)
			if (lease_step(hosts[i].eng) > clk_mono_ms(&fclk.clk))
				break;
}

struct belief {
	const char *key;
	bool holds;
};

/* What the engine reports (it ends a lock's trust by the clock itself):
 * the model does not recompute it. */
static void believe_cb(void *arg, const struct lock_info *li)
{
	struct belief *b = arg;

	if (!strcmp(li->key, b->key) && li->state == LOCK_HELD)
		b->holds = true;
}

static void check_safety(int step)
{
	int k, i;

	for (k = 0; k < KEYS; k++) {
		int believers = 0;

		for (i = 0; i < HOSTS; i++) {
			struct belief b = { keys[k], false };

			lock_each(hosts[i].eng, believe_cb, &b);
			believers += b.holds;
		}
		if (believers > 1) {
			fprintf(stderr,
				"step %d: %d hosts believe they hold %s\n",
				step, believers, keys[k]);
			CHECK(believers <= 1);
		}
	}
}

static void step_once(int step)
{
	int i = (int)rnd(HOSTS), k = (int)rnd(KEYS);
	struct mount *h = &hosts[i];
	struct lock_holder who = {
		.pid = 1, .uid = 0, .gid = 0, .pgid = 1, .mode = 0644
	};
	uint64_t fence;
	int op = (int)rnd(100);

	strcpy(who.cmd, "model");
	if (op < 30) {
		if (!h->held[k]) {
			struct lock *lk;

			if (!lock_acquire(h->eng, keys[k], &who, &lk, NULL,
					  NULL)) {
				h->held[k] = lk;
				h->held_id[k] = ++acquisitions;
			}
		}
	} else if (op < 45) {
		if (h->held[k]) {
			lock_release(h->eng, h->held[k]);
			lock_unref(h->eng, h->held[k]);
			h->held[k] = NULL;
		}
	} else if (op < 55) {
		if (h->held[k] && !lock_fence(h->eng, h->held[k], &fence)) {
			/* Only a confirmed holder gets a token; it must beat
			 * every token an earlier holder of the key got, and a
			 * holder keeps its own. */
			bool same = h->held_id[k] == last_fence_id[k];

			if (same ? fence != last_fence[k]
				 : fence <= last_fence[k]) {
				fprintf(stderr,
					"step %d: fence %llu after %llu on "
					"%s\n",
					step, (unsigned long long)fence,
					(unsigned long long)last_fence[k],
					keys[k]);
				CHECK(!"fences out of order");
			}
			last_fence[k] = fence;
			last_fence_id[k] = h->held_id[k];
		}
	} else if (op < 60) {
		store_fault_set_down(&h->link, !h->link.down);
	} else if (op < 63) {
		store_fault_set_lose_replies(&h->link, !h->link.lose_replies);
	} else if (op < 64) {
		host_crash(h, i);
	} else if (op < 66) {
		/* A held lock whose holder saw it lost: let go of it. */
		for (k = 0; k < KEYS; k++) {
			if (h->held[k] &&
			    lock_get_state(h->eng, h->held[k]) != LOCK_HELD) {
				lock_release(h->eng, h->held[k]);
				lock_unref(h->eng, h->held[k]);
				h->held[k] = NULL;
			}
		}
	} else {
		clk_fake_advance(&fclk, (int64_t)rnd(250));
		settle();
	}
	check_safety(step);
}

int main(int argc, char **argv)
{
	int i, k, step, run;
	int runs = argc > 1 ? atoi(argv[1]) : 10;

	log_setup(LOGL_ERR, false, NULL);
	for (run = 0; run < runs; run++) {
		rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(run + 1);
		printf("run %d seed %llu\n", run, (unsigned long long)rng);
		clk_fake_init(&fclk, 1790000000000LL);
		shared = store_mem_new();
		memset(last_fence, 0, sizeof(last_fence));
		memset(last_fence_id, 0, sizeof(last_fence_id));
		for (i = 0; i < HOSTS; i++) {
			hosts[i].generation = 0;
			host_up(&hosts[i], i);
		}
		for (step = 0; step < STEPS; step++)
			step_once(step);
		for (i = 0; i < HOSTS; i++) {
			for (k = 0; k < KEYS; k++)
				if (hosts[i].held[k])
					lock_unref(hosts[i].eng,
						   hosts[i].held[k]);
			lock_engine_free(hosts[i].eng);
			observe_free(hosts[i].obs);
			host_fake_fini(&hosts[i].machine);
		}
		store_free(shared);
	}
	CHECK_DONE();
}
