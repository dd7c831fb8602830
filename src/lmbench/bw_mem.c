/*
 * bw_mem: memory bandwidth of reading, writing, copying and zeroing a
 * buffer (lmbench's bw_mem rd / wr / cp / bzero).
 *
 * usage: bw_mem [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB rd|wr|cp|bzero
 * Prints "bw_mem.<op> <MB/s> MB/s" (bytes moved by one process, per second,
 * times the number of processes for a parallel run).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state {
	size_t size;
	char op[8];
	uint64_t *src, *dst;
	uint64_t sink;
};

static void init_buffers(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->src)
		return;
	s->src = aligned_alloc(64, s->size);
	s->dst = aligned_alloc(64, s->size);
	if (!s->src || !s->dst)
		abort();
	memset(s->src, 1, s->size);
	memset(s->dst, 2, s->size);
}

static void rd(iter_t n, void *cookie)
{
	struct state *s = cookie;
	size_t words = s->size / sizeof(uint64_t);
	uint64_t sum = 0;

	while (n--)
		for (size_t i = 0; i < words; i += 4)
			sum += s->src[i] + s->src[i + 1] + s->src[i + 2] + s->src[i + 3];
	s->sink += sum;
}

static void wr(iter_t n, void *cookie)
{
	struct state *s = cookie;
	size_t words = s->size / sizeof(uint64_t);

	while (n--)
		for (size_t i = 0; i < words; i++)
			s->dst[i] = i;
	__asm__ __volatile__("" : : "r"(s->dst) : "memory");
}

static void cp(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		memcpy(s->dst, s->src, s->size);
	__asm__ __volatile__("" : : "r"(s->dst) : "memory");
}

static void zero(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		memset(s->dst, 0, s->size);
	__asm__ __volatile__("" : : "r"(s->dst) : "memory");
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 0 };
	benchmp_f f;
	char name[64];

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || first + 1 >= argc)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	snprintf(s.op, sizeof(s.op), "%s", argv[first + 1]);
	if (s.size < 4096 || s.size % 64)
		goto usage;
	if (!strcmp(s.op, "rd"))
		f = rd;
	else if (!strcmp(s.op, "wr"))
		f = wr;
	else if (!strcmp(s.op, "cp"))
		f = cp;
	else if (!strcmp(s.op, "bzero"))
		f = zero;
	else
		goto usage;
	if (benchmp(init_buffers, f, NULL, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "bw_mem.%s", s.op);
	mb(name, get_n() * (uint64_t)s.size * (uint64_t)parallel);
	return 0;
usage:
	fprintf(stderr, "usage: bw_mem [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB(>=4, multiple of 64 bytes) rd|wr|cp|bzero\n");
	return 2;
}
