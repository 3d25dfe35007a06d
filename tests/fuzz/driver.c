/* driver: runs a fuzz target without libFuzzer, as a bounded regression
 * test: every file of its corpus directory, then a fixed number of
 * deterministic mutations of them (bit flips, byte changes, insertions,
 * deletions, truncations, splices). Under ASan/UBSan any memory error fails
 * the test. A target's LLVMFuzzerInitialize runs first, and its
 * structure-aware LLVMFuzzerCustomMutator (if it has one) makes every other
 * mutation, with LLVMFuzzerMutate served by the byte mutations here.
 * When the target aborts (a failed check, UBSan), the input is written to
 * ./driver-crash-<pid> first, so it can be replayed: the driver takes a
 * single file in place of a corpus directory too.
 * Usage: fuzz_X_driver CORPUS_DIR|FILE [ITERATIONS] */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed) __attribute__((weak));
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define MAX_SEEDS	 256
#define DRIVER_MAX_INPUT 65536

static uint8_t *seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS];
static int n_seeds;
static uint64_t rng = 0x243f6a8885a308d3ULL;
static const uint8_t *current;
static size_t current_len;

/* Saves the input being run, then lets the signal do its work. */
static void on_crash(int sig)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "driver-crash-%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, current, current_len) < 0)
			path[0] = '\0';
		close(fd);
		if (write(2, "driver: input saved in ", 23) < 0 ||
		    write(2, path, strlen(path)) < 0 || write(2, "\n", 1) < 0)
			fd = -1;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void run(const uint8_t *data, size_t len)
{
	current = data;
	current_len = len;
	LLVMFuzzerTestOneInput(data, len);
}

static void load_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;

	if (!f || n_seeds >= MAX_SEEDS)
		goto out;
	b = malloc(DRIVER_MAX_INPUT);
	if (!b)
		goto out;
	seed_len[n_seeds] = fread(b, 1, DRIVER_MAX_INPUT, f);
	seeds[n_seeds++] = b;
out:
	if (f)
		fclose(f);
}

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void load_corpus(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d) {
		load_file(dir); /* a single input */
		return;
	}
	while ((e = readdir(d)) && n_seeds < MAX_SEEDS) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		load_file(path);
	}
	closedir(d);
}

static size_t mutate(uint8_t *buf, size_t len, size_t max)
{
	int rounds = 1 + (int)(next() % 4), r;

	for (r = 0; r < rounds; r++) {
		size_t pos = len ? next() % len : 0;

		switch (next() % 7) {
		case 0:
			if (len)
				buf[pos] ^= (uint8_t)(1u << (next() % 8));
			break;
		case 1:
			if (len)
				buf[pos] = (uint8_t)next();
			break;
		case 2: /* insert a byte */
			if (len < max) {
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = "\"{}[]:,\\0 \n<>/&;"[next() % 16];
				len++;
			}
			break;
		case 3: /* delete a run */
			if (len) {
				size_t n = 1 + next() % 8;

				if (n > len - pos)
					n = len - pos;
				memmove(buf + pos, buf + pos + n,
					len - pos - n);
				len -= n;
			}
			break;
		case 4: /* truncate */
			len = pos;
			break;
		case 5: { /* splice from another seed */
			int s = (int)(next() % (uint64_t)n_seeds);
			size_t from = seed_len[s] ? next() % seed_len[s] : 0;
			size_t n = seed_len[s] - from;

			if (pos > max)
				pos = max;
			if (n > max - pos)
				n = max - pos;
			memcpy(buf + pos, seeds[s] + from, n);
			len = pos + n;
			break;
		}
		default: /* duplicate a run */
			if (len && len < max / 2) {
				size_t n = 1 + next() % 16;

				if (n > len - pos)
					n = len - pos;
				memmove(buf + pos + n, buf + pos, len - pos);
				len += n;
			}
			break;
		}
	}
	return len;
}

/* What libFuzzer offers a custom mutator: here, the byte mutations above. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
{
	if (max_size > DRIVER_MAX_INPUT)
		max_size = DRIVER_MAX_INPUT;
	if (size > max_size)
		size = max_size;
	return mutate(data, size, max_size);
}

int main(int argc, char **argv)
{
	long iterations = argc > 2 ? atol(argv[2]) : 20000;
	uint8_t *buf = malloc(DRIVER_MAX_INPUT + 1);
	long i;
	int s;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR [ITERATIONS]\n", argv[0]);
		return 2;
	}
	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	load_corpus(argv[1]);
	if (!n_seeds) {
		fprintf(stderr, "driver: empty corpus %s\n", argv[1]);
		return 1;
	}
	for (s = 0; s < n_seeds; s++) {
		memcpy(buf, seeds[s], seed_len[s]);
		run(buf, seed_len[s]);
	}
	for (i = 0; i < iterations; i++) {
		size_t len;

		s = (int)(next() % (uint64_t)n_seeds);
		memcpy(buf, seeds[s], seed_len[s]);
		if (LLVMFuzzerCustomMutator && (i & 1))
			len = LLVMFuzzerCustomMutator(buf, seed_len[s],
						      DRIVER_MAX_INPUT,
						      (unsigned int)next());
		else
			len = mutate(buf, seed_len[s], DRIVER_MAX_INPUT);
		run(buf, len);
	}
	printf("ok: %d seeds, %ld mutations\n", n_seeds, iterations);
	for (s = 0; s < n_seeds; s++)
		free(seeds[s]);
	free(buf);
	return 0;
}
