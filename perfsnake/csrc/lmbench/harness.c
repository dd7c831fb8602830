/*
 * The timing harness: interval sizing, repetitions with the median, and
 * the parent/children protocol of the paper's Table I over four shared
 * pipes (start, results and exit signals to the children; one response
 * pipe back), with one-byte messages so no message can be interleaved.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "calibrate.h"
#include "harness_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 256
#define MAX_REPS 1000

/* The reported intervals: the median one (by time per iteration) and the
 * shortest per iteration, each with its own iteration count, since
 * re-sizing may give intervals different counts. */
static uint64_t result_time, result_min, result_n, result_min_n;
static int result_parallel = 1;
static struct interval_stats result_stats;
static uint64_t result_target_us;
static int placement = PLACE_UNPINNED;
static int child_index; /* which harness child this process is (0 when single) */
static volatile sig_atomic_t child_died;
/* Untimed intervals before a process's first timed one (run_single). */
#define FIRST_WARMUP_US 50000
static int process_warm;

uint64_t now_ns(void)
{
	return clock_ns();
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

uint64_t get_n_min(void)
{
	return result_min_n;
}

struct pair {
	uint64_t t;
	iter_t n;
};

/* By time per iteration, without division: t1/n1 < t2/n2. */
static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	long double l = (long double)x->t * (long double)y->n, r = (long double)y->t * (long double)x->n;

	return l < r ? -1 : l > r;
}

/* The median and the shortest (per iteration) of the kept intervals. */
static void set_results(uint64_t *times, iter_t *ns, int count)
{
	struct pair *p = malloc(sizeof(*p) * (size_t)count);

	if (!p)
		abort();
	for (int i = 0; i < count; i++)
		p[i] = (struct pair){ times[i], ns[i] };
	qsort(p, (size_t)count, sizeof(*p), cmp_pair);
	result_time = p[count / 2].t; /* an odd count has a middle one; else the upper middle */
	result_n = p[count / 2].n;
	result_min = p[0].t;
	result_min_n = p[0].n;
	free(p);
}

/* ---- interval sizing --------------------------------------------------------- */

int interval_rule(uint64_t t_ns, uint64_t target_ns, iter_t *n)
{
	double t = (double)t_ns, target = (double)target_ns;
	int flags = 0;
	iter_t old = *n;

	if (t > 0.95 * target)
		flags |= IV_KEEP;
	if (t < 0.99 * target || t > 1.2 * target) {
		flags |= IV_OUT;
		if (t > 150000.0) /* a measurable rate: aim at 1.1 x the target */
			*n = (iter_t)((double)old / t * 1.1 * target + 1);
		else if (old < (1ull << 40))
			*n = old << 3;
		if (*n != old)
			flags |= IV_RESIZED;
	}
	return flags;
}

void collect_intervals(measure_f measure, void *ctx, iter_t n, uint64_t target_ns, int reps, uint64_t *times,
		       iter_t *ns, struct interval_stats *st)
{
	int limit = 3 * reps + 10;

	while (st->kept < reps) {
		iter_t used = n;
		uint64_t t = measure(used, ctx);
		int flags = interval_rule(t, target_ns, &n);

		st->attempts++;
		st->out_of_window += !!(flags & IV_OUT);
		st->resized += !!(flags & IV_RESIZED);
		/* A benchmark whose intervals never reach 0.95 x the target
		 * (e.g. iterations capped) must still end: keep the rest. */
		if ((flags & IV_KEEP) || st->attempts > limit) {
			times[st->kept] = t;
			ns[st->kept] = used;
			st->kept++;
		} else
			st->discarded++;
	}
}

/* ---- placement of the two ends of an IPC benchmark ------------------------------- */

/* The CPUs this process may use, in order, as they were before the first
 * pinning (kept across fork: a harness child forked after its parent
 * pinned itself for the sizing run still places over all of them). */
static int allowed_cpus(int *cpus, int max)
{
	static int known = -1, list[CPU_SETSIZE];
	cpu_set_t set;

	if (known < 0) {
		known = 0;
		if (!sched_getaffinity(0, sizeof(set), &set))
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &set))
					list[known++] = c;
	}
	for (int i = 0; i < known && i < max; i++)
		cpus[i] = list[i];
	return known < max ? known : max;
}

int place_end(int end)
{
	int cpus[CPU_SETSIZE], count, cpu;
	cpu_set_t set;

	if (placement == PLACE_UNPINNED)
		return 0;
	count = allowed_cpus(cpus, CPU_SETSIZE);
	if (count < (placement == PLACE_DIFFERENT ? 2 : 1)) {
		fprintf(stderr, "benchmp: placement needs %s CPU(s), %d allowed\n",
			placement == PLACE_DIFFERENT ? "2" : "1", count);
		exit(1);
	}
	/* Harness child c uses CPUs 2c and 2c+1 (mod the allowed ones) for
	 * its two ends, so pairs spread over the machine. */
	cpu = cpus[(2 * child_index + (placement == PLACE_DIFFERENT ? end : 0)) % count];
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("benchmp: sched_setaffinity");
		exit(1);
	}
	fprintf(stderr, "benchmp: placement %s: end %d of pair %d on CPU %d\n",
		placement == PLACE_SAME ? "same" : "different", end, child_index, cpu);
	return cpu;
}

/* ---- one process ------------------------------------------------------------------ */

struct one {
	benchmp_f init, bench, cleanup;
	void *cookie;
};

/* One timing interval of n iterations, between initialize(n) and cleanup(n). */
static uint64_t measure_one(iter_t n, void *ctx)
{
	struct one *o = ctx;
	uint64_t t;

	if (o->init)
		o->init(n, o->cookie);
	t = time_once(o->bench, n, o->cookie);
	if (o->cleanup)
		o->cleanup(n, o->cookie);
	return t;
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
	iter_t ns[MAX_REPS], n;
	struct one o = { init, bench, cleanup, cookie };

	if (init)
		init(0, cookie);
	/* Aim where the re-size rule aims, 1.1 x the interval, so the first
	 * intervals already fall inside its window. */
	n = size_for(bench, cookie, interval_us * 11 / 10);
	if (warmup_us > 0)
		spin_for(bench, cookie, n / 16 + 1, (uint64_t)warmup_us);
	if (!process_warm) {
		/* The first benchmp() of a process first runs untimed intervals
		 * for FIRST_WARMUP_US (at least one): a process timed from its
		 * start moves more under load. lmbench3 does the same by accident,
		 * measuring its timer and loop overheads (33 intervals, about 50 ms
		 * at 1 ms) before its first interval; without them (TIMING_O=0
		 * LOOP_O=0) it moves as much as ours did (docs/lmbench.md). */
		uint64_t end = now_ns() + FIRST_WARMUP_US * 1000;

		do
			measure_one(n, &o);
		while (now_ns() < end);
		process_warm = 1;
	}
	memset(&result_stats, 0, sizeof(result_stats));
	collect_intervals(measure_one, &o, n, interval_us * 1000, reps, times, ns, &result_stats);
	if (cleanup)
		cleanup(0, cookie);
	set_results(times, ns, reps);
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
	struct one o = { init, bench, cleanup, cookie };

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
	/* Every interval is kept when parallel (as in lmbench3): re-sizing one
	 * child would desynchronise the load; the parent counts the intervals
	 * outside the window instead. */
	for (int r = 0; r < reps; r++)
		times[r] = measure_one(n, &o);
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
	iter_t *ns;
	char bytes[MAX_CHILDREN];
	struct sigaction sa, old;
	iter_t n;

	/* Baseline in one process, then size intervals to span time slices. */
	if (init)
		init(0, cookie);
	n = size_for(bench, cookie, interval_us * 11 / 10);
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
	fflush(NULL); /* nothing buffered is written twice by the children */
	for (int c = 0; c < parallel; c++) {
		pids[c] = fork();
		if (pids[c] < 0) {
			perror("fork");
			return -1;
		}
		if (pids[c] == 0) {
			child_index = c;
			child(sig, resp, init, bench, cleanup, n, reps, cookie);
		}
	}
	for (int i = 0; i < NPIPES; i++)
		close(sig[i][0]);
	close(resp[1]);
	memset(bytes, 'x', sizeof(bytes));
	all = calloc((size_t)parallel * (size_t)reps, sizeof(*all));
	ns = calloc((size_t)parallel * (size_t)reps, sizeof(*ns));

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
		memset(&result_stats, 0, sizeof(result_stats));
		for (int i = 0; i < parallel * reps; i++) {
			iter_t probe = n;
			ns[i] = n;
			result_stats.out_of_window += !!(interval_rule(all[i], interval_us * 1000, &probe) & IV_OUT);
		}
		result_stats.attempts = result_stats.kept = parallel * reps;
		set_results(all, ns, parallel * reps);
	}
	free(all);
	free(ns);
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
	if (parallel == 1) {
		result_target_us = interval;
		return run_single(initialize, benchmark, cleanup, interval, warmup_us, repetitions, cookie);
	}
	/* Intervals of about a second span many scheduler time slices. */
	uint64_t par = par_env && atol(par_env) > 0 ? (uint64_t)atol(par_env) : 1000000;
	if (par > interval)
		interval = par;
	result_target_us = interval;
	return run_parallel(initialize, benchmark, cleanup, interval, parallel, warmup_us, repetitions, cookie);
}

int harness_options(int argc, char **argv, int *parallel, int *warmup_us, int *repetitions)
{
	int first = harness_flags(argc, argv, parallel, warmup_us, repetitions);

	return first >= 0 && first < argc ? first : -1;
}

static int parse_placement(const char *text)
{
	if (!strcmp(text, "unpinned"))
		return PLACE_UNPINNED;
	if (!strcmp(text, "same"))
		return PLACE_SAME;
	if (!strcmp(text, "different"))
		return PLACE_DIFFERENT;
	return -1;
}

int harness_flags(int argc, char **argv, int *parallel, int *warmup_us, int *repetitions)
{
	int opt;

	while ((opt = getopt(argc, argv, "P:W:N:C:RA:")) != -1) {
		if (opt == 'P')
			*parallel = atoi(optarg);
		else if (opt == 'W')
			*warmup_us = atoi(optarg);
		else if (opt == 'N')
			*repetitions = atoi(optarg);
		else if (opt == 'C')
			set_calibration_file(optarg);
		else if (opt == 'R')
			request_recalibration();
		else if (opt == 'A' && parse_placement(optarg) >= 0)
			placement = parse_placement(optarg);
		else
			return -1;
	}
	return optind;
}

/* ---- output ---------------------------------------------------------------------------- */

void format_value(char *buf, size_t len, double v)
{
	double a = v < 0 ? -v : v;
	int decimals = 5, digits = 1, shifts = 0;

	/* No libm: count digits by tens. 12.3 has 2 before the point (4
	 * decimals); 0.0826 needs 2 shifts to reach 8.26 (1 + 6 decimals). */
	if (a >= 1.0) {
		for (double x = a; x >= 10.0 && digits < 400; x /= 10.0)
			digits++;
		decimals = 6 - digits;
	} else if (a > 0) {
		for (double x = a; x < 1.0 && shifts < 400; x *= 10.0)
			shifts++;
		decimals = shifts + 5;
	}
	if (decimals < 0)
		decimals = 0;
	if (decimals > 15)
		decimals = 15;
	snprintf(buf, len, "%.*f", decimals, v);
}

void result_line(const char *name, double value, const char *unit)
{
	char text[64];

	format_value(text, sizeof(text), value);
	printf("%s %s %s\n", name, text, unit);
}

/* How the intervals went: a comment line for the parser, after the results. */
void harness_note(void)
{
	printf("# benchmp interval_us=%llu calibration=%s parallel=%d intervals=%d kept=%d discarded=%d "
	       "out_of_window=%d resized=%d\n",
	       (unsigned long long)result_target_us, calibration_source(), result_parallel, result_stats.attempts,
	       result_stats.kept, result_stats.discarded, result_stats.out_of_window, result_stats.resized);
}

/* Operations per iteration: callers pass get_n() x that. */
static double per_iteration(uint64_t n)
{
	return (double)(n ? n : 1) / (double)(result_n ? result_n : 1);
}

static void latency(const char *name, uint64_t n, double unit_ns, const char *unit)
{
	double ops = per_iteration(n);
	char min_name[256];

	result_line(name, (double)result_time / ((double)result_n * ops) / unit_ns, unit);
	snprintf(min_name, sizeof(min_name), "%s.min", name);
	result_line(min_name, (double)result_min / ((double)result_min_n * ops) / unit_ns, unit);
	harness_note();
}

void nano(const char *name, uint64_t n)
{
	latency(name, n, 1.0, "ns");
}

void micro(const char *name, uint64_t n)
{
	latency(name, n, 1000.0, "us");
}

/* The median line is all processes together (bytes counts them all); the
 * best line is one process's shortest interval, the paper's "best bandwidth
 * obtained by a single process while the system is under load" (Fig. 10). */
void mb(const char *name, uint64_t bytes)
{
	double per_iter = per_iteration(bytes); /* bytes per iteration, all processes */
	char max_name[256];

	result_line(name, per_iter * (double)result_n / 1e6 / ((double)(result_time ? result_time : 1) / 1e9),
		    "MB/s");
	snprintf(max_name, sizeof(max_name), "%s.max", name);
	result_line(max_name,
		    per_iter / result_parallel * (double)result_min_n / 1e6 /
			    ((double)(result_min ? result_min : 1) / 1e9),
		    "MB/s");
	harness_note();
}
