/*
 * The timing harness: interval sizing, repetitions with the median, and
 * the parent/children protocol of the paper's Table I over four shared
 * pipes (start, results and exit signals to the children; one response
 * pipe back), with one-byte messages so no message can be interleaved.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 256
#define MAX_REPS 1000

static uint64_t result_time, result_min, result_n;
static int result_parallel = 1;
static const char *calibration_file;
static volatile sig_atomic_t child_died;

uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t gettime(void)
{
	return result_time;
}

uint64_t gettime_min(void)
{
	return result_min;
}

uint64_t get_n(void)
{
	return result_n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- interval sizing --------------------------------------------------------- */

/* The paper's calibration load: a single-pointer circular chain. */
static void chase(iter_t n, void *cookie)
{
	void **p = (void **)cookie;

	while (n--)
		p = (void **)*p;
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

static uint64_t time_once(benchmp_f f, iter_t n, void *cookie)
{
	uint64_t t0 = now_ns();

	f(n, cookie);
	return now_ns() - t0;
}

/* Iterations of f needed for about `us` microseconds. */
static iter_t size_for(benchmp_f f, void *cookie, uint64_t us)
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

/* ---- calibration cache --------------------------------------------------------- */

/* The interval depends on the clock and the machine, not on the benchmark,
 * so one calibration (several seconds) serves every later run here. */
static void calibration_key(char *key, size_t len)
{
	char host[256] = "unknown", model[256] = "unknown", line[512];
	struct timespec res = { 0, 0 };
	FILE *f;

	gethostname(host, sizeof(host) - 1);
	clock_getres(CLOCK_MONOTONIC, &res);
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
	snprintf(key, len, "host=%s cpu=%s clock_res_ns=%ld", host, model,
		 (long)res.tv_sec * 1000000000L + res.tv_nsec);
}

/* LMBENCH_CALIBRATION, set by a user, wins over -C, a wrapper's default. */
static const char *cache_path(void)
{
	const char *env = getenv("LMBENCH_CALIBRATION");

	if (env && *env)
		return env;
	return calibration_file && *calibration_file ? calibration_file : NULL;
}

/* "<key>\t<interval_us>" lines; 0 when this machine has none. */
static uint64_t cache_lookup(const char *path, const char *key)
{
	char line[1024];
	size_t klen = strlen(key);
	uint64_t found = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == '\t')
			found = strtoull(line + klen + 1, NULL, 10);
	if (f)
		fclose(f);
	return found;
}

/* Rewrite the file with our line replaced, through a temporary file and
 * rename() so concurrent runs never see a half-written cache. */
static void cache_store(const char *path, const char *key, uint64_t us)
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
	fprintf(out, "%s\t%llu\n", key, (unsigned long long)us);
	if (fclose(out) || rename(tmp, path)) {
		fprintf(stderr, "benchmp: cannot write calibration cache %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
}

static uint64_t calibrate(void);

uint64_t timing_interval_us(void)
{
	static uint64_t chosen;
	const char *env = getenv("LMBENCH_ENOUGH_US");
	const char *path = cache_path();
	char key[768];

	if (chosen)
		return chosen;
	if (env && atol(env) > 0)
		return chosen = (uint64_t)atol(env);
	if (!path)
		return chosen = calibrate();
	calibration_key(key, sizeof(key));
	chosen = cache_lookup(path, key);
	if (chosen) {
		fprintf(stderr, "benchmp: timing interval %llu us from calibration cache %s\n",
			(unsigned long long)chosen, path);
		return chosen;
	}
	chosen = calibrate();
	cache_store(path, key, chosen);
	fprintf(stderr, "benchmp: calibrated timing interval %llu us, saved to %s\n", (unsigned long long)chosen,
		path);
	return chosen;
}

/* The delta method: the shortest candidate interval whose median time
 * scales linearly (within 0.25 %) when the work grows by 1.5-3.5 %. */
static uint64_t calibrate(void)
{
	static const uint64_t candidates[] = { 5000, 10000, 50000, 100000 };
	static const double deltas[] = { 1.015, 1.02, 1.035 };
	void *cell;

	cell = &cell;
	for (size_t c = 0; c < sizeof(candidates) / sizeof(candidates[0]); c++) {
		iter_t n = size_for(chase, &cell, candidates[c]);
		uint64_t base[TRIES], t_n;
		int ok = 1;

		for (int i = 0; i < TRIES; i++)
			base[i] = time_once(chase, n, &cell);
		t_n = median(base, TRIES);
		for (size_t d = 0; d < 3 && ok; d++) {
			uint64_t v[TRIES];
			for (int i = 0; i < TRIES; i++)
				v[i] = time_once(chase, (iter_t)(deltas[d] * (double)n), &cell);
			double err = ((double)median(v, TRIES) - deltas[d] * (double)t_n) / (double)t_n;
			if (err < -0.0025 || err > 0.0025)
				ok = 0;
		}
		if (ok)
			return candidates[c];
	}
	return candidates[sizeof(candidates) / sizeof(candidates[0]) - 1];
}

/* ---- one process ------------------------------------------------------------------ */

/* `reps` timing intervals of n iterations, each between initialize(n) and cleanup(n). */
static void timed_reps(benchmp_f init, benchmp_f bench, benchmp_f cleanup, iter_t n, int reps, void *cookie,
		       uint64_t *times)
{
	for (int r = 0; r < reps; r++) {
		if (init)
			init(n, cookie);
		times[r] = time_once(bench, n, cookie);
		if (cleanup)
			cleanup(n, cookie);
	}
}

static void spin_for(benchmp_f f, void *cookie, iter_t n, uint64_t us)
{
	uint64_t end = now_ns() + us * 1000;

	while (now_ns() < end)
		f(n, cookie);
}

static int run_single(benchmp_f init, benchmp_f bench, benchmp_f cleanup, uint64_t interval_us,
		      int warmup_us, int reps, void *cookie)
{
	uint64_t times[MAX_REPS];
	iter_t n;

	if (init)
		init(0, cookie);
	n = size_for(bench, cookie, interval_us);
	if (warmup_us > 0)
		spin_for(bench, cookie, n / 16 + 1, (uint64_t)warmup_us);
	timed_reps(init, bench, cleanup, n, reps, cookie, times);
	if (cleanup)
		cleanup(0, cookie);
	result_time = median(times, reps);
	result_min = times[0]; /* median() sorted them */
	result_n = n;
	return 0;
}

/* ---- parallel: Table I ---------------------------------------------------------------- */

enum { START, RESULTS, EXIT, NPIPES };

static void on_sigchld(int sig)
{
	(void)sig;
	child_died = 1;
}

/* Non-blocking poll for one byte on fd: 1 when a byte was taken. */
static int take_byte(int fd)
{
	char c;

	return read(fd, &c, 1) == 1;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Parent side: read `len` bytes, failing if a child dies first. */
static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = poll(&pfd, 1, 100);

		if (child_died)
			return -1;
		if (r <= 0)
			continue;
		ssize_t got = read(fd, p, len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		len -= (size_t)got;
	}
	return 0;
}

static void child(int sig[NPIPES][2], int resp[2], benchmp_f init, benchmp_f bench, benchmp_f cleanup,
		  iter_t n, int reps, void *cookie)
{
	uint64_t times[MAX_REPS];

	for (int i = 0; i < NPIPES; i++) {
		close(sig[i][1]);
		fcntl(sig[i][0], F_SETFL, fcntl(sig[i][0], F_GETFL) | O_NONBLOCK);
	}
	close(resp[0]);
	if (init)
		init(0, cookie);
	bench(n / 16 + 1, cookie); /* run for a little while */
	if (write_all(resp[1], "r", 1))
		_exit(3);
	while (!take_byte(sig[START][0])) /* run while polling for go */
		bench(n / 64 + 1, cookie);
	timed_reps(init, bench, cleanup, n, reps, cookie, times);
	if (write_all(resp[1], "d", 1))
		_exit(3);
	while (!take_byte(sig[RESULTS][0])) /* keep the load on for the others */
		bench(n / 64 + 1, cookie);
	if (write_all(resp[1], times, sizeof(times[0]) * (size_t)reps))
		_exit(3);
	fcntl(sig[EXIT][0], F_SETFL, fcntl(sig[EXIT][0], F_GETFL) & ~O_NONBLOCK);
	while (!take_byte(sig[EXIT][0]))
		;
	if (cleanup)
		cleanup(0, cookie);
	_exit(0);
}

static int run_parallel(benchmp_f init, benchmp_f bench, benchmp_f cleanup, uint64_t interval_us,
			int parallel, int warmup_us, int reps, void *cookie)
{
	int sig[NPIPES][2], resp[2], status, failed = 0;
	pid_t pids[MAX_CHILDREN];
	uint64_t *all;
	char bytes[MAX_CHILDREN];
	struct sigaction sa, old;
	iter_t n;

	/* Baseline in one process, then size intervals to span time slices. */
	if (init)
		init(0, cookie);
	n = size_for(bench, cookie, interval_us);
	if (cleanup)
		cleanup(0, cookie);

	for (int i = 0; i < NPIPES; i++)
		if (pipe(sig[i]))
			return -1;
	if (pipe(resp))
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, &old);
	child_died = 0;
	for (int c = 0; c < parallel; c++) {
		pids[c] = fork();
		if (pids[c] < 0) {
			perror("fork");
			return -1;
		}
		if (pids[c] == 0)
			child(sig, resp, init, bench, cleanup, n, reps, cookie);
	}
	for (int i = 0; i < NPIPES; i++)
		close(sig[i][0]);
	close(resp[1]);
	memset(bytes, 'x', sizeof(bytes));
	all = calloc((size_t)parallel * (size_t)reps, sizeof(*all));

	if (read_all(resp[0], bytes, (size_t)parallel)) { /* P ready signals */
		failed = 1;
		goto out;
	}
	if (warmup_us > 0)
		usleep((useconds_t)warmup_us);
	if (write_all(sig[START][1], bytes, (size_t)parallel) || read_all(resp[0], bytes, (size_t)parallel)) {
		failed = 1; /* go, then P done signals */
		goto out;
	}
	for (int c = 0; c < parallel; c++) { /* one child at a time owns the response pipe */
		if (write_all(sig[RESULTS][1], "g", 1) ||
		    read_all(resp[0], all + (size_t)c * (size_t)reps, sizeof(*all) * (size_t)reps)) {
			failed = 1;
			goto out;
		}
	}
	if (write_all(sig[EXIT][1], bytes, (size_t)parallel))
		failed = 1;
out:
	if (failed) {
		fprintf(stderr, "benchmp: a child died before the exit signal; the measurement is invalid\n");
		for (int c = 0; c < parallel; c++)
			kill(pids[c], SIGKILL);
	}
	for (int c = 0; c < parallel; c++) {
		while (waitpid(pids[c], &status, 0) < 0 && errno == EINTR)
			;
		if (!failed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
			fprintf(stderr, "benchmp: child %d failed\n", c);
			failed = 1;
		}
	}
	sigaction(SIGCHLD, &old, NULL);
	for (int i = 0; i < NPIPES; i++)
		close(sig[i][1]);
	close(resp[0]);
	if (!failed) {
		result_time = median(all, parallel * reps);
		result_min = all[0];
		result_n = n;
	}
	free(all);
	return failed ? -1 : 0;
}

int benchmp(benchmp_f initialize, benchmp_f benchmark, benchmp_f cleanup, int enough_us, int parallel,
	    int warmup_us, int repetitions, void *cookie)
{
	uint64_t interval = timing_interval_us();
	const char *par_env = getenv("LMBENCH_PARALLEL_INTERVAL_US");

	if (repetitions < 1)
		repetitions = TRIES;
	if (repetitions > MAX_REPS)
		repetitions = MAX_REPS;
	if (parallel < 1)
		parallel = 1;
	if (parallel > MAX_CHILDREN)
		parallel = MAX_CHILDREN;
	result_parallel = parallel;
	if ((uint64_t)enough_us > interval)
		interval = (uint64_t)enough_us;
	if (parallel == 1)
		return run_single(initialize, benchmark, cleanup, interval, warmup_us, repetitions, cookie);
	/* Intervals of about a second span many scheduler time slices. */
	uint64_t par = par_env && atol(par_env) > 0 ? (uint64_t)atol(par_env) : 1000000;
	if (par > interval)
		interval = par;
	return run_parallel(initialize, benchmark, cleanup, interval, parallel, warmup_us, repetitions, cookie);
}

int harness_options(int argc, char **argv, int *parallel, int *warmup_us, int *repetitions)
{
	int first = harness_flags(argc, argv, parallel, warmup_us, repetitions);

	return first >= 0 && first < argc ? first : -1;
}

int harness_flags(int argc, char **argv, int *parallel, int *warmup_us, int *repetitions)
{
	int opt;

	while ((opt = getopt(argc, argv, "P:W:N:C:")) != -1) {
		if (opt == 'P')
			*parallel = atoi(optarg);
		else if (opt == 'W')
			*warmup_us = atoi(optarg);
		else if (opt == 'N')
			*repetitions = atoi(optarg);
		else if (opt == 'C')
			set_calibration_file(optarg);
		else
			return -1;
	}
	return optind;
}

void set_calibration_file(const char *path)
{
	calibration_file = path;
}

void nano(const char *name, uint64_t n)
{
	double d = (double)(n ? n : 1);

	printf("%s %.4f ns\n", name, (double)gettime() / d);
	printf("%s.min %.4f ns\n", name, (double)gettime_min() / d);
}

void micro(const char *name, uint64_t n)
{
	double d = (double)(n ? n : 1) * 1000.0;

	printf("%s %.4f us\n", name, (double)gettime() / d);
	printf("%s.min %.4f us\n", name, (double)gettime_min() / d);
}

/* The median line is all processes together (bytes counts them all); the
 * best line is one process's shortest interval, the paper's "best bandwidth
 * obtained by a single process while the system is under load" (Fig. 10). */
void mb(const char *name, uint64_t bytes)
{
	double best = (double)(gettime_min() ? gettime_min() : 1) / 1e9;

	printf("%s %.2f MB/s\n", name, (double)bytes / 1e6 / ((double)gettime() / 1e9));
	printf("%s.max %.2f MB/s\n", name, (double)bytes / (double)result_parallel / 1e6 / best);
}
