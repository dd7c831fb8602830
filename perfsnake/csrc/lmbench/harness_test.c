/*
 * harness_test: the harness's decisions on simulated timings (a real clock
 * cannot be made to drift or stall on demand). Prints one "ok <check>" or
 * "FAIL <check>: <detail>" line per check; exits 1 if any failed.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "calibrate.h"
#include "harness_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(int ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "ok" : "FAIL", what, ok ? "" : ": ", ok ? "" : detail);
	failures += !ok;
}

/* ---- lmbench3's keep / re-size rule ---- */

static void test_interval_rule(void)
{
	const uint64_t target = 10000000; /* 10 ms */
	iter_t n = 1000;
	int f;

	f = interval_rule(10500000, target, &n); /* inside [0.99, 1.2]: kept as is */
	check(f == IV_KEEP && n == 1000, "rule_inside_window_kept_unchanged", "flags or n changed");
	f = interval_rule(9700000, target, &n); /* 0.97: kept (> 0.95) but re-sized */
	check((f & IV_KEEP) && (f & IV_OUT) && (f & IV_RESIZED) && n == (iter_t)(1000 / 9700000.0 * 11000000 + 1),
	      "rule_097_kept_and_resized_to_1_1", "expected keep + resize to 1.1 x target");
	n = 1000;
	f = interval_rule(9000000, target, &n); /* 0.9: discarded and re-sized */
	check(!(f & IV_KEEP) && (f & IV_OUT) && n > 1000, "rule_090_discarded_and_grown", "0.9 x target must be dropped");
	n = 1000;
	f = interval_rule(30000000, target, &n); /* a slow interval (3x): kept, count shrinks */
	check((f & IV_KEEP) && (f & IV_OUT) && n == (iter_t)(1000 / 30000000.0 * 11000000 + 1),
	      "rule_slow_interval_kept_and_shrunk", "expected keep + shrink");
	n = 7;
	f = interval_rule(100000, target, &n); /* 100 us: too short to estimate a rate, x8 */
	check(!(f & IV_KEEP) && n == 56, "rule_too_short_grows_x8", "expected n x 8");
	n = 1000;
	f = interval_rule(9500000, target, &n); /* exactly 0.95: not more than 0.95, dropped */
	check(!(f & IV_KEEP), "rule_095_boundary_dropped", "0.95 exactly must not be kept");
}

/* A simulated benchmark: 10 us per iteration, except that interval number
 * `slow_at` (0-based) runs at `slow_factor` times the cost. */
struct sim {
	int calls, slow_at;
	double slow_factor;
	iter_t seen[64];
};

static uint64_t simulated(iter_t n, void *ctx)
{
	struct sim *s = ctx;
	double t = (double)n * 10000.0;

	if (s->calls == s->slow_at)
		t *= s->slow_factor;
	if (s->calls < 64)
		s->seen[s->calls] = n;
	s->calls++;
	return (uint64_t)t;
}

static void test_collect(void)
{
	uint64_t times[32];
	iter_t ns[32];
	struct interval_stats st;
	struct sim s = { 0, 2, 3.0, { 0 } };
	char detail[256];

	/* Target 10 ms, 1100 iterations = 11 ms: inside the window. Interval 2
	 * is 3x slow (a noisy neighbour): kept, counted, and the next ones are
	 * re-sized from its rate, then back into the window. */
	memset(&st, 0, sizeof(st));
	collect_intervals(simulated, &s, 1100, 10000000, 11, times, ns, &st);
	snprintf(detail, sizeof(detail), "attempts=%d kept=%d discarded=%d out=%d resized=%d", st.attempts, st.kept,
		 st.discarded, st.out_of_window, st.resized);
	check(st.kept == 11 && st.out_of_window >= 1 && st.resized >= 1, "collect_slow_interval_counted_and_resized",
	      detail);
	check(s.seen[3] < s.seen[2], "collect_count_shrinks_after_slow_interval", detail);
	/* After the slow interval the count is 1.1 x 10 ms / 30 us per iteration
	 * (367): 3.7 ms at the true rate, dropped (< 0.95), then re-sized back. */
	check(st.discarded >= 1 && ns[10] == 1100 + 1, "collect_recovers_the_window", detail);

	/* Steady timings inside the window: no re-size, every interval kept. */
	struct sim steady = { 0, -1, 1.0, { 0 } };
	memset(&st, 0, sizeof(st));
	collect_intervals(simulated, &steady, 1050, 10000000, 11, times, ns, &st);
	snprintf(detail, sizeof(detail), "attempts=%d out=%d resized=%d", st.attempts, st.out_of_window, st.resized);
	check(st.attempts == 11 && st.out_of_window == 0 && st.resized == 0, "collect_steady_needs_no_resize", detail);

	/* Intervals that can never reach the target (n stuck at 1 with a
	 * 1 s cost against 10 ms... or always too short) still end. */
	struct sim stuck = { 0, -1, 1.0, { 0 } };
	memset(&st, 0, sizeof(st));
	collect_intervals(simulated, &stuck, 1, 1000000000000ull, 5, times, ns, &st);
	snprintf(detail, sizeof(detail), "attempts=%d kept=%d", st.attempts, st.kept);
	check(st.kept == 5 && st.attempts <= 3 * 5 + 10 + 5, "collect_always_terminates", detail);
}

/* ---- the delta test ---- */

static const double deltas[3] = { 1.015, 1.02, 1.035 };

/* Simulated rounds: N costs base ns, each delta scales it exactly, plus
 * `noise` relative jitter alternating in sign, plus `bias` on delta 2. */
static void rounds(uint64_t (*t)[4], int count, double base, double noise, double bias)
{
	for (int r = 0; r < count; r++) {
		double j = (r % 2 ? 1 : -1) * noise;
		t[r][0] = (uint64_t)(base * (1 + j));
		for (int d = 0; d < 3; d++)
			t[r][d + 1] = (uint64_t)(base * deltas[d] * (1 - j) * (d == 1 ? 1 + bias : 1));
	}
}

static void test_delta(void)
{
	uint64_t t[TRIES][4];
	double worst;
	int pass;
	char detail[128];

	rounds(t, TRIES, 5e6, 0, 0);
	pass = delta_test((const uint64_t(*)[4])t, TRIES, deltas, &worst);
	check(pass && worst < 1e-6, "delta_linear_passes", "exact scaling must pass");

	rounds(t, TRIES, 5e6, 0.0005, 0); /* +-0.05 % jitter: within +-0.25 % */
	pass = delta_test((const uint64_t(*)[4])t, TRIES, deltas, &worst);
	snprintf(detail, sizeof(detail), "worst=%g", worst);
	check(pass, "delta_small_jitter_passes", detail);

	rounds(t, TRIES, 5e6, 0, 0.004); /* delta 2 off by 0.4 %: fails */
	pass = delta_test((const uint64_t(*)[4])t, TRIES, deltas, &worst);
	snprintf(detail, sizeof(detail), "worst=%g", worst);
	check(!pass && worst > DELTA_TOLERANCE, "delta_nonlinear_fails", detail);

	/* One wild round (a preemption) does not move the median. */
	rounds(t, TRIES, 5e6, 0, 0);
	t[3][2] *= 2;
	pass = delta_test((const uint64_t(*)[4])t, TRIES, deltas, &worst);
	check(pass, "delta_median_ignores_one_outlier", "one outlier must not fail the test");

	/* A slow drift (the clock rate rising 1 % per round) cancels in the
	 * paired ratios, where the paper's separate medians would fail. */
	for (int r = 0; r < TRIES; r++)
		for (int d = 0; d < 4; d++)
			t[r][d] = (uint64_t)(5e6 * (d ? deltas[d - 1] : 1) * (1 + 0.01 * r));
	pass = delta_test((const uint64_t(*)[4])t, TRIES, deltas, &worst);
	check(pass, "delta_drift_cancels_in_pairs", "a drift across rounds must not fail");

	int none[4] = { 0, 0, 0, 0 }, late[4] = { 0, 0, 1, 1 }, first[4] = { 1, 1, 1, 1 };
	check(choose_candidate(none, 4) == -1, "choose_none_is_fallback", "no pass must be -1 (fallback)");
	check(choose_candidate(late, 4) == 2, "choose_smallest_passing", "expected index 2");
	check(choose_candidate(first, 4) == 0, "choose_first", "expected index 0");

	/* PASS_NEED of PASS_TRIALS trials, decided as soon as the count is certain */
	int fails = PASS_TRIALS - PASS_NEED + 1; /* failures that make passing impossible */
	check(trials_verdict(PASS_NEED, PASS_NEED) == 1, "trials_straight", "PASS_NEED passes in a row must pass");
	check(trials_verdict(PASS_NEED, PASS_TRIALS) == 1, "trials_just_enough", "PASS_NEED of PASS_TRIALS must pass");
	check(trials_verdict(PASS_NEED - 1, PASS_TRIALS - 1) == -1, "trials_undecided", "one trial left must go on");
	check(trials_verdict(PASS_NEED - 1, PASS_TRIALS) == 0, "trials_one_short", "one pass short must fail");
	check(trials_verdict(0, fails) == 0 && trials_verdict(0, fails - 1) == -1, "trials_early_failure",
	      "failing must be decided at the first impossible count, not before");
}

/* ---- printed precision ---- */

static void test_format(void)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0.0826, "0.0826000" },   { 2.5094, "2.50940" },	  { 0.14, "0.140000" },
		{ 12345.678, "12345.7" },  { 123456.7, "123457" },	  { 98765432.1, "98765432" },
		{ 0.000123456789, "0.000123457" }, { 1.0, "1.00000" },	  { -79.25, "-79.2500" },
		{ 0.0, "0.00000" },
	};
	char buf[64], detail[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		format_value(buf, sizeof(buf), cases[i].v);
		snprintf(detail, sizeof(detail), "%.17g printed as %s, want %s", cases[i].v, buf, cases[i].want);
		check(!strcmp(buf, cases[i].want), "format_six_significant_digits", detail);
	}
}

int main(void)
{
	test_interval_rule();
	test_collect();
	test_delta();
	test_format();
	printf("%s\n", failures ? "harness_test: FAILED" : "harness_test: all passed");
	return failures ? 1 : 0;
}
