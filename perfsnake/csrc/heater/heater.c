/*
 * heater: the sequential CPU heater (benchkit paper, section 3.2).
 *
 * Pins itself to one CPU, runs a fixed integer loop for a given duration and
 * prints how many operations it performed. The work per iteration is fixed,
 * so the count is proportional to the effective speed of that CPU.
 *
 * usage: heater --cpu N --duration SECONDS [--interval-ms MS]
 *
 * With --interval-ms, it also prints one "interval <k> <seconds> <ops>" line
 * per interval so that analyses can look at the time series (warm-up etc.).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Iterations between clock reads: keeps clock_gettime far below 1 % of the
 * loop while bounding the overshoot of the deadline to well under 1 ms. */
#define BATCH 4096

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One "operation": a few dependent integer steps the compiler cannot fold. */
static inline uint64_t work(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x * 0x2545F4914F6CDD1DULL + 1;
}

/* A batch of operations, kept out of line so profiles name it (heat_batch). */
static __attribute__((noinline)) uint64_t heat_batch(uint64_t x)
{
	for (int i = 0; i < BATCH; i++)
		x = work(x);
	return x;
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || end == s || *end;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end;
}

int main(int argc, char **argv)
{
	long cpu = -1, interval_ms = 0;
	double duration = 1.0, start, deadline, next_tick = 0, t;
	uint64_t ops = 0, tick_ops = 0, x = 88172645463325252ULL;
	volatile uint64_t sink;
	long tick = 0;
	cpu_set_t set;
	int i, bad = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			bad |= parse_long(argv[++i], &cpu);
		else if (!strcmp(argv[i], "--duration") && i + 1 < argc)
			bad |= parse_double(argv[++i], &duration);
		else if (!strcmp(argv[i], "--interval-ms") && i + 1 < argc)
			bad |= parse_long(argv[++i], &interval_ms);
		else
			bad = 1;
	}
	if (bad || duration <= 0 || interval_ms < 0) {
		fprintf(stderr, "usage: heater [--cpu N] --duration SECONDS "
				"[--interval-ms MS]\n");
		return 2;
	}
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET((int)cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "heater: cannot pin to CPU %ld: %s\n",
				cpu, strerror(errno));
			return 1;
		}
	}

	start = now_s();
	deadline = start + duration;
	if (interval_ms)
		next_tick = start + (double)interval_ms / 1000.0;
	for (;;) {
		x = heat_batch(x);
		ops += BATCH;
		t = now_s();
		if (interval_ms && t >= next_tick) {
			printf("interval %ld %.6f %" PRIu64 "\n", tick, t - start,
			       ops - tick_ops);
			tick++;
			tick_ops = ops;
			next_tick += (double)interval_ms / 1000.0;
		}
		if (t >= deadline)
			break;
	}
	sink = x;
	(void)sink;
	printf("CPU: %ld\n", cpu);
	printf("Duration: %.6f\n", now_s() - start);
	printf("Operations performed: %" PRIu64 "\n", ops);
	return 0;
}
