/* driver: runs a fuzz target without libFuzzer, as a bounded regression
 * test: every file of its corpus directory, then a fixed number of
 * deterministic mutations of them (bit flips, byte changes, insertions,
 * deletions, truncations, splices). Under ASan/UBSan any memory error fails
 * the test. Usage: fuzz_X_driver CORPUS_DIR [ITERATIONS] */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEEDS 256
#define DRIVER_MAX_INPUT 65536

static uint8_t *seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS];
static int n_seeds;
static uint64_t rng = 0x243f6a8885a308d3ULL;

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
		fprintf(stderr, "driver: cannot open corpus %s\n", dir);
		exit(1);
	}
	while ((e = readdir(d)) && n_seeds < MAX_SEEDS) {
		FILE *f;
		uint8_t *b;
		size_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		b = malloc(DRIVER_MAX_INPUT);
		n = fread(b, 1, DRIVER_MAX_INPUT, f);
		fclose(f);
		seeds[n_seeds] = b;
		seed_len[n_seeds++] = n;
	}
	closedir(d);
}

static size_t mutate(uint8_t *buf, size_t len)
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
			if (len < DRIVER_MAX_INPUT) {
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
				memmove(buf + pos, buf + pos + n, len - pos - n);
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

			if (n > DRIVER_MAX_INPUT - pos)
				n = DRIVER_MAX_INPUT - pos;
			memcpy(buf + pos, seeds[s] + from, n);
			len = pos + n;
			break;
		}
		default: /* duplicate a run */
			if (len && len < DRIVER_MAX_INPUT / 2) {
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
	load_corpus(argv[1]);
	if (!n_seeds) {
		fprintf(stderr, "driver: empty corpus %s\n", argv[1]);
		return 1;
	}
	for (s = 0; s < n_seeds; s++) {
		memcpy(buf, seeds[s], seed_len[s]);
		LLVMFuzzerTestOneInput(buf, seed_len[s]);
	}
	for (i = 0; i < iterations; i++) {
		size_t len;

		s = (int)(next() % (uint64_t)n_seeds);
		memcpy(buf, seeds[s], seed_len[s]);
		len = mutate(buf, seed_len[s]);
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("ok: %d seeds, %ld mutations\n", n_seeds, iterations);
	for (s = 0; s < n_seeds; s++)
		free(seeds[s]);
	free(buf);
	return 0;
}
