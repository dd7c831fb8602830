/*
 * The harness's decisions as pure functions, so harness_test.c can check
 * them on simulated timings (a real clock cannot be made to misbehave on
 * demand). harness.c uses exactly these (the calibration's are in
 * calibrate.h). Also the timing primitives both files use.
 */
#ifndef PERFSNAKE_HARNESS_INTERNAL_H
#define PERFSNAKE_HARNESS_INTERNAL_H

#include <stddef.h>
#include <time.h>

#include "bench.h"

/* interval_rule() flags: lmbench3's benchmp_interval() rule. */
#define IV_KEEP 1 /* lasted more than 0.95 x the target: a repetition */
#define IV_OUT 2 /* outside [0.99, 1.2] x the target */
#define IV_RESIZED 4 /* *n changed for the next interval */

/* One timed interval of *n iterations lasting t_ns against target_ns:
 * returns IV_* flags and re-sizes *n when the interval fell outside the
 * window (to 1.1 x the target by the measured rate, or x8 when the interval
 * was too short, under 150 us, to estimate a rate). */
int interval_rule(uint64_t t_ns, uint64_t target_ns, iter_t *n);

/* Intervals of one process until `reps` are kept, each measured by
 * measure(n, ctx); at most `3 * reps + 10` attempts, after which the
 * remaining intervals are kept whatever they lasted (and counted out of the
 * window). times[]/ns[] get the kept intervals; the counters add up. */
struct interval_stats {
	int attempts, kept, discarded, out_of_window, resized;
};
typedef uint64_t (*measure_f)(iter_t n, void *ctx);
void collect_intervals(measure_f measure, void *ctx, iter_t n, uint64_t target_ns, int reps, uint64_t *times,
		       iter_t *ns, struct interval_stats *st);

/* A result value in fixed notation with at least 6 significant digits (and
 * no exponent, so the parser's pattern holds). */
void format_value(char *buf, size_t len, double v);

/* The timing primitives of harness.c and calibrate.c, static in each file
 * that includes them: each gets its own copy for the compiler to inline
 * into its timed loops, as when the harness and its calibration were one
 * file (no interval times a call into another file). A file that uses
 * none of them (harness_test.c) is no error. */
#define TIMING_HELPER static __attribute__((unused))

/* CLOCK_MONOTONIC in nanoseconds (now_ns(), bench.h). */
TIMING_HELPER uint64_t clock_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One call of f(n, cookie), timed (ns). */
TIMING_HELPER uint64_t time_once(benchmp_f f, iter_t n, void *cookie)
{
	uint64_t t0 = clock_ns();

	f(n, cookie);
	return clock_ns() - t0;
}

/* Iterations of f needed for about `us` microseconds. */
TIMING_HELPER iter_t size_for(benchmp_f f, void *cookie, uint64_t us)
{
	iter_t n = 1;
	uint64_t t;

	for (;;) {
		t = time_once(f, n, cookie);
		if (t >= us * 1000 / 8 || n > (1ull << 40))
			break;
		n *= 2;
	}
	if (t == 0)
		t = 1;
	n = (iter_t)((double)n * (double)us * 1000.0 / (double)t) + 1;
	return n;
}

#endif
