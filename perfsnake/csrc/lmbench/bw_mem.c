/*
 * bw_mem: memory bandwidth of reading, writing, copying and zeroing a
 * buffer (lmbench's bw_mem and all its operations).
 *
 * usage: bw_mem [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB OP
 * OP: rd, wr, rdwr, cp_lmbench (one 4-byte word in every 16 bytes: read,
 *     written, read then written, copied); frd, fwr, fcp (every 4-byte
 *     word); cp (memcpy), bcopy (libc's bcopy), bzero (memset).
 * Prints "bw_mem.<op> <MB/s> MB/s" (bytes moved by one process, per second,
 * times the number of processes for a parallel run).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/*
 * The operations lmbench3 added after rd, wr, cp and bzero, each on the
 * same 512-byte blocks (BLOCK_WORDS words) and counted as the whole buffer:
 * rdwr reads a word and writes it back as 1, cp_lmbench copies one word,
 * both on rd's one word in four; frd, fwr and fcp read, write and copy
 * every word. Each block is one expression or one run of statements, as
 * lmbench writes them; the compiler schedules (and may vectorise) them as
 * it likes.
 */
#define RW4(k) sum += p[k], p[k] = 1, sum += p[k + 4], p[k + 4] = 1, sum += p[k + 8], p[k + 8] = 1, \
	sum += p[k + 12], p[k + 12] = 1
#define C4(k) q[k] = p[k], q[k + 4] = p[k + 4], q[k + 8] = p[k + 8], q[k + 12] = p[k + 12]
#define FR8(k) p[k] + p[k + 1] + p[k + 2] + p[k + 3] + p[k + 4] + p[k + 5] + p[k + 6] + p[k + 7]
#define FR32(k) FR8(k) + FR8(k + 8) + FR8(k + 16) + FR8(k + 24)
#define FW8(k) p[k] = p[k + 1] = p[k + 2] = p[k + 3] = p[k + 4] = p[k + 5] = p[k + 6] = p[k + 7]
#define FW32(k) FW8(k) = FW8(k + 8) = FW8(k + 16) = FW8(k + 24)
#define FC8(k) q[k] = p[k], q[k + 1] = p[k + 1], q[k + 2] = p[k + 2], q[k + 3] = p[k + 3], \
	q[k + 4] = p[k + 4], q[k + 5] = p[k + 5], q[k + 6] = p[k + 6], q[k + 7] = p[k + 7]
#define FC32(k) FC8(k), FC8(k + 8), FC8(k + 16), FC8(k + 24)

static void rdwr(iter_t n, void *cookie)
{
	struct state *s = cookie;
	uint32_t *end = (uint32_t *)((char *)s->dst + s->size);
	uint32_t sum = 0;

	while (n--) {
		for (uint32_t *p = (uint32_t *)s->dst; p < end; p += BLOCK_WORDS) {
			RW4(0), RW4(16), RW4(32), RW4(48), RW4(64), RW4(80), RW4(96), RW4(112);
		}
		__asm__ __volatile__("" : "+r"(sum) : : "memory");
	}
	s->sink += sum;
}

static void cp_lmbench(iter_t n, void *cookie)
{
	struct state *s = cookie;
	const uint32_t *end = (const uint32_t *)((const char *)s->src + s->size);

	while (n--) {
		uint32_t *q = (uint32_t *)s->dst;

		for (const uint32_t *p = (const uint32_t *)s->src; p < end; p += BLOCK_WORDS, q += BLOCK_WORDS) {
			C4(0), C4(16), C4(32), C4(48), C4(64), C4(80), C4(96), C4(112);
		}
		__asm__ __volatile__("" : : "r"(s->dst) : "memory");
	}
}

static void frd(iter_t n, void *cookie)
{
	struct state *s = cookie;
	const uint32_t *end = (const uint32_t *)((const char *)s->src + s->size);
	uint32_t sum = 0;

	while (n--) {
		for (const uint32_t *p = (const uint32_t *)s->src; p < end; p += BLOCK_WORDS)
			sum += FR32(0) + FR32(32) + FR32(64) + FR32(96);
		__asm__ __volatile__("" : "+r"(sum) : : "memory");
	}
	s->sink += sum;
}

static void fwr(iter_t n, void *cookie)
{
	struct state *s = cookie;
	uint32_t *end = (uint32_t *)((char *)s->dst + s->size);

	while (n--) {
		for (uint32_t *p = (uint32_t *)s->dst; p < end; p += BLOCK_WORDS)
			FW32(0) = FW32(32) = FW32(64) = FW32(96) = 1;
		__asm__ __volatile__("" : : "r"(s->dst) : "memory");
	}
}

static void fcp(iter_t n, void *cookie)
{
	struct state *s = cookie;
	const uint32_t *end = (const uint32_t *)((const char *)s->src + s->size);

	while (n--) {
		uint32_t *q = (uint32_t *)s->dst;

		for (const uint32_t *p = (const uint32_t *)s->src; p < end; p += BLOCK_WORDS, q += BLOCK_WORDS) {
			FC32(0), FC32(32), FC32(64), FC32(96);
		}
		__asm__ __volatile__("" : : "r"(s->dst) : "memory");
	}
}

/* libc's bcopy (lmbench's "libc bcopy"), source first. */
static void copy_bcopy(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		bcopy(s->src, s->dst, s->size);
	__asm__ __volatile__("" : : "r"(s->dst) : "memory");
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 0 };
	benchmp_f f;
	const char *op;
	char name[64];

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || first + 1 >= argc)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	op = argv[first + 1];
	snprintf(s.op, sizeof(s.op), "%s", op);
	if (s.size < 4096 || s.size % 512)
		goto usage;
	if (!strcmp(op, "rd"))
		f = rd;
	else if (!strcmp(op, "wr"))
		f = wr;
	else if (!strcmp(op, "cp"))
		f = cp;
	else if (!strcmp(op, "bzero"))
		f = zero;
	else if (!strcmp(op, "rdwr"))
		f = rdwr;
	else if (!strcmp(op, "cp_lmbench"))
		f = cp_lmbench;
	else if (!strcmp(op, "frd"))
		f = frd;
	else if (!strcmp(op, "fwr"))
		f = fwr;
	else if (!strcmp(op, "fcp"))
		f = fcp;
	else if (!strcmp(op, "bcopy"))
		f = copy_bcopy;
	else
		goto usage;
	if (benchmp(init_buffers, f, NULL, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "bw_mem.%s", op);
	mb(name, get_n() * (uint64_t)s.size * (uint64_t)parallel);
	return 0;
usage:
	fprintf(stderr, "usage: bw_mem [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB(>=4, a multiple of 512 bytes) "
		"rd|wr|rdwr|cp_lmbench|frd|fwr|fcp|cp|bcopy|bzero\n");
	return 2;
}
