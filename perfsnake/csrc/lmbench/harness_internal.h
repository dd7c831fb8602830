/*
 * The harness's decisions as pure functions, so harness_test.c can check
 * them on simulated timings (a real clock cannot be made to misbehave on
 * demand). harness.c uses exactly these.
 */
#ifndef PERFSNAKE_HARNESS_INTERNAL_H
#define PERFSNAKE_HARNESS_INTERNAL_H

#include <stddef.h>

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

/* The delta test of the paper on one candidate interval. rounds x 4
 * durations: t[r][0] of N iterations, t[r][1..3] of delta[0..2] x N,
 * measured back to back in round r. Passes (returns 1) when, for every
 * delta, the shortest t[.][d] over the rounds is delta x the shortest
 * t[.][0] within 0.25 %. The paper compares medians; we compare minima,
 * its own statistic where it wants a bound: a preemption or a noisy
 * neighbour only lengthens an interval, so the minima keep the clock's
 * error and drop the scheduler's, and the answer stays the same on a
 * loaded machine. *worst gets the largest |error|. */
#define DELTA_TOLERANCE 0.0025
int delta_test(const uint64_t (*t)[4], int rounds, const double deltas[3], double *worst);

/* A candidate interval passes when PASS_NEED of PASS_TRIALS delta trials
 * pass. A marginal interval passes some of its trials: on this VM 5 ms
 * passes about two thirds of them, so "twice in a row" chose 5 ms in 4 of
 * 10 fresh calibrations and 7 of 9 in 2-4 of 10; 26 of 30 keeps an interval
 * that passes 67 % of its trials out (chosen 1.3 % of the time) and one
 * that passes 95 % in (98 %). After `done` trials with `passed` passes: 1
 * passed, 0 failed, -1 go on (decided as soon as the count is certain, so
 * a failing interval is dropped after 5 failures). */
#define PASS_TRIALS 30
#define PASS_NEED 26
int trials_verdict(int passed, int done);

/* Which candidate to use, from pass[c] (1: it passed, trials_verdict):
 * the smallest passing one; -1 when none passed (the caller falls back to
 * the largest and says so). */
int choose_candidate(const int *pass, int ncandidates);

/* A result value in fixed notation with at least 6 significant digits (and
 * no exponent, so the parser's pattern holds). */
void format_value(char *buf, size_t len, double v);

#endif
