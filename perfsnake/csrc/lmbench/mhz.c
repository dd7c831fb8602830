/*
 * mhz: the processor clock, from a chain of dependent integer additions
 * (one cycle each on every current core), as lmbench's mhz does with its
 * own chains; like lmbench, the minimum is the answer (the shortest
 * interval is the one least disturbed). The turbo clock while busy, not
 * the nominal one. Not scalable (as in lmbench3): no -P.
 *
 * usage: mhz [-W warmup_us] [-N repetitions] [-C calfile]
 * Prints "mhz <ns> ns" per cycle (median; "mhz.min" the shortest) and
 * "mhz.mhz <MHz> MHz" from the shortest.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>

#define STEPS 128 /* dependent additions per iteration */

static volatile uint64_t seed_one = 1;
static volatile uint64_t sink;

#define ADD(x, a) __asm__ __volatile__("add %1, %0" : "+r"(x) : "r"(a))

static void chain(iter_t n, void *cookie)
{
	uint64_t x = seed_one, a = seed_one;

	(void)cookie;
	while (n--)
		for (int i = 0; i < STEPS; i++) {
#if defined(__x86_64__)
			ADD(x, a); /* one add instruction, its result the next one's input */
#else
			x += a;
			__asm__ __volatile__("" : "+r"(x));
#endif
		}
	sink = x;
}

int main(int argc, char **argv)
{
	int parallel = 1, warmup = 0, reps = TRIES;

	if (harness_flags(argc, argv, &parallel, &warmup, &reps) != argc || parallel != 1) {
		fprintf(stderr, "usage: mhz [-W warmup_us] [-N repetitions] [-C calfile] (not scalable: no -P)\n");
		return 2;
	}
	if (benchmp(NULL, chain, NULL, 0, 1, warmup, reps, NULL))
		return 1;
	nano("mhz", get_n() * STEPS);
	result_line("mhz.mhz", 1000.0 * (double)get_n_min() * STEPS / (double)(gettime_min() ? gettime_min() : 1), "MHz");
	return 0;
}
