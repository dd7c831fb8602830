/*
 * The timing interval: calibrated with the paper's delta method on a
 * pointer chase, or fixed by LMBENCH_ENOUGH_US, and kept in a cache file
 * keyed by everything that changes the answer (bench.h,
 * timing_interval_us()).
 */
#define _GNU_SOURCE
#include "calibrate.h"

#include "bench.h"
#include "harness_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define CALIBRATION_METHOD 4 /* in the cache key: a new method never reads old answers */

static const char *calibration_file;
static const char *interval_source = "none";
static int recalibrate;

void request_recalibration(void)
{
	recalibrate = 1;
}

const char *calibration_source(void)
{
	return interval_source;
}

/* The paper's calibration load: a single-pointer circular chain. */
static void chase(iter_t n, void *cookie)
{
	void **p = (void **)cookie;

	while (n--)
		p = (void **)*p;
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

/* ---- calibration --------------------------------------------------------------- */

int delta_test(const uint64_t (*t)[4], int rounds, const double deltas[3], double *worst)
{
	uint64_t best[4];
	double err;
	int pass = 1;

	*worst = 0;
	if (rounds < 1)
		return 0;
	for (int d = 0; d < 4; d++) {
		best[d] = t[0][d];
		for (int r = 1; r < rounds; r++)
			if (t[r][d] < best[d])
				best[d] = t[r][d];
	}
	for (int d = 0; d < 3; d++) {
		err = best[0] ? (double)best[d + 1] / (double)best[0] - deltas[d] : 1e300;
		if (err < 0)
			err = -err;
		if (!(err <= DELTA_TOLERANCE)) /* also fails a NaN */
			pass = 0;
		if (!(err <= *worst))
			*worst = err;
	}
	return pass;
}

int trials_verdict(int passed, int done)
{
	if (passed >= PASS_NEED)
		return 1;
	if (passed + (PASS_TRIALS - done) < PASS_NEED)
		return 0;
	return -1;
}

int choose_candidate(const int *pass, int ncandidates)
{
	for (int c = 0; c < ncandidates; c++)
		if (pass[c])
			return c;
	return -1;
}

/* 1 ms first: an interval shorter than the scheduler's slice is rarely
 * preempted, so on a shared CPU most intervals still time the benchmark
 * alone (README "Calibration", bench/lmbench_interval.py). */
static const uint64_t candidates[] = { 1000, 5000, 10000, 50000, 100000 };
#define NCANDIDATES ((int)(sizeof(candidates) / sizeof(candidates[0])))

/* One delta test of `n` chase iterations: TRIES rounds of N and the three
 * deltas back to back, after one untimed warm-up round. */
static int delta_trial(void *cell, iter_t n, double *worst)
{
	static const double deltas[] = { 1.015, 1.02, 1.035 };
	uint64_t t[TRIES][4];

	for (int d = 0; d < 4; d++)
		time_once(chase, d ? (iter_t)(deltas[d - 1] * (double)n) : n, cell);
	for (int r = 0; r < TRIES; r++)
		for (int d = 0; d < 4; d++)
			t[r][d] = time_once(chase, d ? (iter_t)(deltas[d - 1] * (double)n) : n, cell);
	return delta_test((const uint64_t(*)[4])t, TRIES, deltas, worst);
}

/* Each candidate's worst delta error in its last trial (for the fallback
 * line), and its trials passed and run (for the calibration's stderr line:
 * how close a choice was is what tells a reader whether it will repeat). */
static double calibration_worst[NCANDIDATES];
static int calibration_passed[NCANDIDATES], calibration_trials[NCANDIDATES];

/* Whether a candidate passes PASS_NEED of PASS_TRIALS delta trials. */
static int candidate_passes(void *cell, iter_t n, int c)
{
	int passed = 0, verdict = -1, done = 0;

	while (verdict < 0) {
		passed += delta_trial(cell, n, &calibration_worst[c]);
		verdict = trials_verdict(passed, ++done);
	}
	calibration_passed[c] = passed;
	calibration_trials[c] = done;
	return verdict;
}

/* "5000 us passed 3 of 8 delta trials, 10000 us 26 of 26" for the candidates tried. */
static void describe_trials(char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int c = 0; c < NCANDIDATES && calibration_trials[c] && used < len; c++)
		used += (size_t)snprintf(out + used, len - used, c ? ", %llu us %d of %d" : "%llu us passed %d of %d delta trials",
					 (unsigned long long)candidates[c], calibration_passed[c], calibration_trials[c]);
}

/* The shortest candidate that passes (trials_verdict). *settled is 0 when
 * none did, and the answer is then the shortest candidate too: when no
 * interval is linear to +-0.25 %, a longer one buys no accuracy and is
 * preempted more often on a busy machine. */
static uint64_t calibrate(int *settled)
{
	int pass[NCANDIDATES] = { 0 }, chosen;
	void *cell;

	cell = &cell;
	for (int c = 0; c < NCANDIDATES; c++) {
		iter_t n = size_for(chase, &cell, candidates[c]);

		pass[c] = candidate_passes(&cell, n, c);
		if (pass[c])
			break;
	}
	chosen = choose_candidate(pass, NCANDIDATES);
	*settled = chosen >= 0;
	return candidates[chosen >= 0 ? chosen : 0];
}

/* ---- calibration cache --------------------------------------------------------- */

static void read_line_of(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(out, (int)len, f))
		snprintf(out, len, "unknown");
	out[strcspn(out, "\n")] = 0;
	if (f)
		fclose(f);
}

/* Everything that changes the answer: the machine (host, CPU model, CPUs
 * online), the clock (its resolution and the kernel's clocksource), the
 * kernel, and the calibration method itself. */
static void calibration_key(char *key, size_t len)
{
	char host[256] = "unknown", model[256] = "unknown", source[64], line[512];
	struct timespec res = { 0, 0 };
	struct utsname u;
	FILE *f;

	gethostname(host, sizeof(host) - 1);
	clock_getres(CLOCK_MONOTONIC, &res);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	read_line_of("/sys/devices/system/clocksource/clocksource0/current_clocksource", source, sizeof(source));
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (colon && !strncmp(line, "model name", 10)) {
			colon += strspn(colon + 1, " \t") + 1;
			snprintf(model, sizeof(model), "%.*s", (int)strcspn(colon, "\n"), colon);
			break;
		}
	}
	if (f)
		fclose(f);
	for (char *c = model; *c; c++) /* the key holds no tab: it ends at one */
		if (*c == '\t')
			*c = ' ';
	snprintf(key, len, "host=%s cpu=%s cpus=%ld kernel=%s clocksource=%s clock_res_ns=%ld method=%d", host,
		 model, sysconf(_SC_NPROCESSORS_ONLN), u.release, source,
		 (long)res.tv_sec * 1000000000L + res.tv_nsec, CALIBRATION_METHOD);
}

/* LMBENCH_CALIBRATION, set by a user, wins over -C, a wrapper's default. */
static const char *cache_path(void)
{
	const char *env = getenv("LMBENCH_CALIBRATION");

	if (env && *env)
		return env;
	return calibration_file && *calibration_file ? calibration_file : NULL;
}

/* "<key>\t<interval_us>\t<settled|fallback>" lines; 0 when this machine
 * has none. *settled from the third field. */
static uint64_t cache_lookup(const char *path, const char *key, int *settled)
{
	char line[1024];
	size_t klen = strlen(key);
	uint64_t found = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == '\t') {
			char *end;
			found = strtoull(line + klen + 1, &end, 10);
			*settled = strncmp(end, "\tfallback", 9) != 0;
		}
	if (f)
		fclose(f);
	return found;
}

/* Rewrite the file with our line replaced, through a temporary file and
 * rename() so concurrent runs never see a half-written cache. */
static void cache_store(const char *path, const char *key, uint64_t us, int settled)
{
	char tmp[4096], line[1024];
	size_t klen = strlen(key);
	FILE *in, *out;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	out = fopen(tmp, "w");
	if (!out) {
		fprintf(stderr, "benchmp: cannot write calibration cache %s: %s\n", path, strerror(errno));
		return;
	}
	in = fopen(path, "r");
	while (in && fgets(line, sizeof(line), in))
		if (strncmp(line, key, klen) || line[klen] != '\t')
			fputs(line, out);
	if (in)
		fclose(in);
	fprintf(out, "%s\t%llu\t%s\n", key, (unsigned long long)us, settled ? "settled" : "fallback");
	if (fclose(out) || rename(tmp, path)) {
		fprintf(stderr, "benchmp: cannot write calibration cache %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
}

/* The one stderr line of a fallback, with each candidate's worst error
 * when this process calibrated (not when the fallback came from the cache). */
static void say_fallback(uint64_t us, int measured)
{
	char worst[256] = "";
	size_t used = 0;

	for (int c = 0; measured && c < NCANDIDATES && used < sizeof(worst); c++)
		used += (size_t)snprintf(worst + used, sizeof(worst) - used, "%s%llu us %.2f %%", c ? ", " : "; worst errors: ",
					 (unsigned long long)candidates[c], calibration_worst[c] * 100);
	fprintf(stderr,
		"benchmp: calibration could not settle (no candidate interval passed the delta test, +-%.2f %%, in %d "
		"of %d trials): falling back to %llu us%s\n",
		DELTA_TOLERANCE * 100, PASS_NEED, PASS_TRIALS, (unsigned long long)us, worst);
}

uint64_t timing_interval_us(void)
{
	static uint64_t chosen;
	const char *env = getenv("LMBENCH_ENOUGH_US"), *re = getenv("LMBENCH_RECALIBRATE");
	const char *path = cache_path();
	char key[1024], trials[256];
	int settled = 1;

	if (chosen)
		return chosen;
	if (env && atol(env) > 0) {
		interval_source = "fixed";
		return chosen = (uint64_t)atol(env);
	}
	if (re && *re && strcmp(re, "0"))
		recalibrate = 1;
	if (path) {
		calibration_key(key, sizeof(key));
		chosen = recalibrate ? 0 : cache_lookup(path, key, &settled);
	}
	if (chosen) {
		interval_source = settled ? "cache" : "fallback";
		if (!settled)
			say_fallback(chosen, 0);
		fprintf(stderr, "benchmp: timing interval %llu us from calibration cache %s\n",
			(unsigned long long)chosen, path);
		return chosen;
	}
	chosen = calibrate(&settled);
	interval_source = settled ? "calibrated" : "fallback";
	if (!settled)
		say_fallback(chosen, 1);
	describe_trials(trials, sizeof(trials));
	if (path)
		cache_store(path, key, chosen, settled);
	fprintf(stderr, "benchmp: %s timing interval %llu us (%s; %d of %d needed)%s%s\n",
		settled ? "calibrated" : "fallback", (unsigned long long)chosen, trials, PASS_NEED, PASS_TRIALS,
		path ? ", saved to " : "", path ? path : "");
	return chosen;
}

void set_calibration_file(const char *path)
{
	calibration_file = path;
}
