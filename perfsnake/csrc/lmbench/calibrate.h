/*
 * The timing interval's calibration (the paper's delta method) and its
 * cache file, as calibrate.c implements them: timing_interval_us() and
 * set_calibration_file() (bench.h) are its public side; this header is the
 * rest the harness needs, plus the decisions as pure functions so
 * harness_test.c can check them on simulated timings.
 */
#ifndef PERFSNAKE_CALIBRATE_H
#define PERFSNAKE_CALIBRATE_H

#include <stdint.h>

/* -R: ignore the cached interval and replace it. */
void request_recalibration(void);

/* Where timing_interval_us() got its answer, for the harness's note line:
 * "none" (not asked yet), "fixed", "cache", "calibrated" or "fallback". */
const char *calibration_source(void);

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

#endif
