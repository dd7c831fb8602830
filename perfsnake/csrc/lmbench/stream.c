/*
 * stream: McCalpin's STREAM kernels on the harness (lmbench's stream).
 *   version 1: copy  c = a          scale  b = q*c
 *              add   c = a + b      triad  a = b + q*c
 *   version 2: fill  a = q          copy   (as above)
 *              daxpy a = a + q*b    sum    s = s + a
 * Arrays of doubles, SIZE_KB each (default 32768: far beyond the caches).
 * Bandwidth counts the bytes the kernel explicitly reads and writes, as
 * STREAM does (copy/scale 2 arrays, add/triad/daxpy 3, fill/sum 1), not
 * the extra line fills of write misses. Each parallel child has its own
 * arrays; the MB/s printed is that of all processes together.
 *
 * usage: stream [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] OP [SIZE_KB]
 * Prints "stream.<op> <MB/s> MB/s" (median) and "stream.<op>.max" (best).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state {
	size_t len; /* doubles per array */
	double *a, *b, *c;
	double q, sink;
};

static const struct {
	const char *name;
	int arrays; /* arrays read or written per element */
} kernels[] = { { "copy", 2 }, { "scale", 2 }, { "add", 3 }, { "triad", 3 },
		{ "fill", 1 }, { "daxpy", 3 }, { "sum", 1 } };

/* Per process: its own arrays, first touched here so the pages are its own
 * (and local to where it runs), not copies of the parent's. */
static void alloc_arrays(iter_t n, void *cookie)
{
	struct state *s = cookie;
	size_t bytes = s->len * sizeof(double);

	if (n != 0 || s->a)
		return;
	s->a = aligned_alloc(64, bytes);
	s->b = aligned_alloc(64, bytes);
	s->c = aligned_alloc(64, bytes);
	if (!s->a || !s->b || !s->c)
		abort();
	for (size_t i = 0; i < s->len; i++) {
		s->a[i] = 1.0;
		s->b[i] = 2.0;
		s->c[i] = 0.0;
	}
}

static void free_arrays(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->a)
		return;
	free(s->a);
	free(s->b);
	free(s->c);
	s->a = s->b = s->c = NULL;
}

/* Keeps the stores: the compiler must assume the arrays are read later. */
#define KEEP(p) __asm__ __volatile__("" : : "r"(p) : "memory")

static void k_copy(iter_t n, void *cookie)
{
	struct state *s = cookie;
	double *restrict a = s->a, *restrict c = s->c;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			c[i] = a[i];
		KEEP(c);
	}
}

static void k_scale(iter_t n, void *cookie)
{
	struct state *s = cookie;
	double *restrict b = s->b, *restrict c = s->c, q = s->q;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			b[i] = q * c[i];
		KEEP(b);
	}
}

static void k_add(iter_t n, void *cookie)
{
	struct state *s = cookie;
	double *restrict a = s->a, *restrict b = s->b, *restrict c = s->c;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			c[i] = a[i] + b[i];
		KEEP(c);
	}
}

static void k_triad(iter_t n, void *cookie)
{
	struct state *s = cookie;
	double *restrict a = s->a, *restrict b = s->b, *restrict c = s->c, q = s->q;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			a[i] = b[i] + q * c[i];
		KEEP(a);
	}
}

static void k_fill(iter_t n, void *cookie)
{
	struct state *s = cookie;
	double *restrict a = s->a, q = s->q;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			a[i] = q;
		KEEP(a);
	}
}

static void k_daxpy(iter_t n, void *cookie)
{
	struct state *s = cookie;
	double *restrict a = s->a, *restrict b = s->b, q = s->q;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			a[i] = a[i] + q * b[i];
		KEEP(a);
	}
}

static void k_sum(iter_t n, void *cookie)
{
	struct state *s = cookie;
	const double *restrict a = s->a;
	double sum = 0;

	while (n--) {
		for (size_t i = 0; i < s->len; i++)
			sum += a[i];
		KEEP(a);
	}
	s->sink += sum;
}

static const benchmp_f functions[] = { k_copy, k_scale, k_add, k_triad, k_fill, k_daxpy, k_sum };

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES, k = -1;
	struct state s = { 0 };
	long kb = 32768;
	char name[64];

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0)
		goto usage;
	for (int i = 0; i < (int)(sizeof(kernels) / sizeof(kernels[0])); i++)
		if (!strcmp(argv[first], kernels[i].name))
			k = i;
	if (first + 1 < argc)
		kb = atol(argv[first + 1]);
	if (k < 0 || kb < 1)
		goto usage;
	s.len = (size_t)kb * 1024 / sizeof(double);
	s.q = 3.0; /* STREAM's scalar */
	if (benchmp(alloc_arrays, functions[k], free_arrays, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "stream.%s", kernels[k].name);
	mb(name, get_n() * (uint64_t)kernels[k].arrays * s.len * sizeof(double) * (uint64_t)parallel);
	return 0;
usage:
	fprintf(stderr, "usage: stream [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] "
			"copy|scale|add|triad|fill|daxpy|sum [SIZE_KB per array, default 32768]\n");
	return 2;
}
