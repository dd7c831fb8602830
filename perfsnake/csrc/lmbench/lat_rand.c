/*
 * lat_rand: the C library's random number generators (lmbench's lat_rand):
 * one call of drand48(), lrand48(), rand() or random() per iteration, its
 * result added to a running sum (as lmbench does, so the call is kept; for
 * drand48 the sum is a double, a dependent floating-point add per call).
 * The generators are left unseeded, as lmbench leaves them.
 *
 * usage: lat_rand [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [OP...|all]
 * OP: drand48, lrand48, rand, random (default: all, in that order).
 * Prints "lat_rand.<op> <latency> ns" per call, for each OP.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long sink;

static void use(long v)
{
	__asm__ __volatile__("" : : "r"(v));
	sink += v;
}

static void bench_drand48(iter_t n, void *cookie)
{
	double v = 0.0;

	(void)cookie;
	while (n--)
		v += drand48();
	use((long)v);
}

static void bench_lrand48(iter_t n, void *cookie)
{
	long v = 0;

	(void)cookie;
	while (n--)
		v += lrand48();
	use(v);
}

static void bench_rand(iter_t n, void *cookie)
{
	int v = 0;

	(void)cookie;
	while (n--)
		v += rand();
	use(v);
}

static void bench_random(iter_t n, void *cookie)
{
	long v = 0;

	(void)cookie;
	while (n--)
		v += random();
	use(v);
}

static const struct {
	const char *name;
	benchmp_f f;
} generators[] = {
	{ "drand48", bench_drand48 },
	{ "lrand48", bench_lrand48 },
	{ "rand", bench_rand },
	{ "random", bench_random },
};
#define NGEN (sizeof(generators) / sizeof(generators[0]))

static int lookup(const char *name)
{
	for (size_t k = 0; k < NGEN; k++)
		if (!strcmp(generators[k].name, name))
			return (int)k;
	return -1;
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES, chosen[NGEN * 4], count = 0;
	char name[64];

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > (int)(sizeof(chosen) / sizeof(chosen[0])))
		goto usage;
	if (first == argc || (argc - first == 1 && !strcmp(argv[first], "all")))
		for (size_t k = 0; k < NGEN; k++)
			chosen[count++] = (int)k;
	else
		for (int a = first; a < argc; a++)
			if ((chosen[count++] = lookup(argv[a])) < 0)
				goto usage;
	for (int c = 0; c < count; c++) {
		if (benchmp(NULL, generators[chosen[c]].f, NULL, 0, parallel, warmup, reps, NULL))
			return 1;
		snprintf(name, sizeof(name), "lat_rand.%s", generators[chosen[c]].name);
		nano(name, get_n());
	}
	return 0;
usage:
	fprintf(stderr, "usage: lat_rand [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] "
		"[drand48|lrand48|rand|random...|all]\n");
	return 2;
}
