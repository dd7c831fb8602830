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

/*
 * rd and wr use lmbench's definition: one 4-byte word in every 16 bytes
 * (four per 64-byte line), the whole buffer counted, since memory moves
 * whole lines. A loop over every word measures the core's load/store issue
 * rate instead whenever the buffer is in cache (a scalar store loop wrote
 * 29 GB/s where memset wrote 98 GB/s on a 4 MB buffer here); from DRAM the
 * two definitions agree. The 32 words of a 512-byte block are summed in
 * one expression, as lmbench does, so rd's figures compare with its.
 */
#define BLOCK_WORDS 128 /* 512 bytes of uint32_t */
#define R4(k) p[k] + p[k + 4] + p[k + 8] + p[k + 12]
#define W4(k) p[k] = 1, p[k + 4] = 1, p[k + 8] = 1, p[k + 12] = 1

static void rd(iter_t n, void *cookie)
{
	struct state *s = cookie;
	const uint32_t *end = (const uint32_t *)((const char *)s->src + s->size);
	uint32_t sum = 0;

	while (n--) {
		for (const uint32_t *p = (const uint32_t *)s->src; p < end; p += BLOCK_WORDS)
			sum += R4(0) + R4(16) + R4(32) + R4(48) + R4(64) + R4(80) + R4(96) + R4(112);
		/* Each pass reads the buffer again: no load is hoisted out of the
		 * loop. (A volatile pointer did the same but also serialised the
		 * loads: 0.75 of lmbench3's rd on a 4 MB buffer.) */
		__asm__ __volatile__("" : "+r"(sum) : : "memory");
	}
	s->sink += sum;
}

static void wr(iter_t n, void *cookie)
{
	struct state *s = cookie;
	uint32_t *end = (uint32_t *)((char *)s->dst + s->size);

	while (n--)
		for (uint32_t *p = (uint32_t *)s->dst; p < end; p += BLOCK_WORDS) {
			W4(0), W4(16), W4(32), W4(48), W4(64), W4(80), W4(96), W4(112);
		}
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
	if (s.size < 4096 || s.size % 512)
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
