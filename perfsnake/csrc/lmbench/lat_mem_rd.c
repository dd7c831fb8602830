/*
 * lat_mem_rd: memory read latency by array size and stride, by chasing a
 * chain of pointers (each load depends on the previous one), so the
 * latency steps up as the array outgrows each cache level.
 *
 * Two orders of the chain (MODE):
 *   sequential  (the default, lmbench's) each element points STRIDE bytes
 *               further, the last back to the first: the hardware
 *               prefetchers follow it, so this is the latency a streaming
 *               pointer walk sees;
 *   random      (close to lmbench's -t) the elements in a shuffled order
 *               over the whole array, so no prefetcher can follow: the
 *               load-to-use latency of each level. lmbench's -t shuffles
 *               the pages and the lines within each page; we shuffle all
 *               lines at once.
 *
 * usage: lat_mem_rd [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB [STRIDE_BYTES [sequential|random]]
 * Prints "lat_mem_rd.<size_kb>k <latency> ns" (sequential) or
 * "lat_mem_rd.random.<size_kb>k <latency> ns".
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNROLL 100

struct state {
	size_t size, stride;
	int random;
	char *buf;
	void **start;
};

/* Per-child: build the chain, in address order or in a random order of
 * lines. */
static void init_chain(iter_t n, void *cookie)
{
	struct state *s = cookie;
	size_t lines, *order;

	if (n != 0 || s->buf)
		return;
	lines = s->size / s->stride;
	s->buf = aligned_alloc(4096, (s->size + 4095) / 4096 * 4096);
	order = malloc(lines * sizeof(*order));
	if (!s->buf || !order)
		abort();
	for (size_t i = 0; i < lines; i++)
		order[i] = i;
	srand(42);
	for (size_t i = lines - 1; s->random && i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(void **)(s->buf + order[i] * s->stride) = s->buf + order[(i + 1) % lines] * s->stride;
	s->start = (void **)(s->buf + order[0] * s->stride);
	free(order);
}

#define HOP p = (void **)*p;
#define TEN HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP

static void chase(iter_t n, void *cookie)
{
	struct state *s = cookie;
	void **p = s->start;

	while (n--) {
		TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN
	}
	s->start = p; /* keep the chain live */
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 0, 64, 0, NULL, NULL };
	char name[64];

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	if (first + 1 < argc)
		s.stride = (size_t)atol(argv[first + 1]);
	if (first + 2 < argc) {
		if (!strcmp(argv[first + 2], "random"))
			s.random = 1;
		else if (strcmp(argv[first + 2], "sequential"))
			goto usage;
	}
	if (s.stride < sizeof(void *) || s.size < 2 * s.stride || argc - first > 3)
		goto usage;
	if (parallel == 1)
		init_chain(0, &s);
	if (benchmp(init_chain, chase, NULL, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "lat_mem_rd.%s%zuk", s.random ? "random." : "", s.size / 1024);
	nano(name, get_n() * UNROLL);
	return 0;
usage:
	fprintf(stderr, "usage: lat_mem_rd [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB [STRIDE_BYTES >= 8 [sequential|random]]\n");
	return 2;
}
