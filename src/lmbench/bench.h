/*
 * Our lmbench3-style timing harness (Staelin, SP&E 2005), written anew.
 *
 * benchmp() runs `benchmark` in `parallel` processes, coordinated so that
 * every child is running the benchmark while any child measures, and
 * repeats each timing interval `repetitions` times; gettime() is then the
 * median interval (ns), gettime_min() the shortest one and get_n() the
 * iterations per interval.
 */
#ifndef PERFSNAKE_BENCH_H
#define PERFSNAKE_BENCH_H

#include <stdint.h>

typedef uint64_t iter_t;
typedef void (*benchmp_f)(iter_t iterations, void *cookie);

#define TRIES 11

/* Returns 0 on success, -1 when a child failed (died before the exit
 * signal, or the protocol broke); the reason is printed on stderr. */
int benchmp(benchmp_f initialize, benchmp_f benchmark, benchmp_f cleanup,
	    int enough_us, int parallel, int warmup_us, int repetitions,
	    void *cookie);

uint64_t gettime(void); /* median interval, nanoseconds */
/* Shortest interval over all repetitions (and children): the paper uses the
 * minimum where it wants a bound rather than a representative value. */
uint64_t gettime_min(void);
uint64_t get_n(void); /* iterations per interval */
uint64_t now_ns(void);

/* The timing interval chosen for the clock (the paper's delta method).
 * LMBENCH_ENOUGH_US fixes it; otherwise a calibration cache file
 * (LMBENCH_CALIBRATION, else -C FILE) keyed by host, CPU model and clock
 * resolution is read, or written after calibrating. */
uint64_t timing_interval_us(void);

/* Parses -P parallel, -W warmup_us, -N repetitions, -C calibration_file;
 * returns the index of the first operand, or -1 on a bad option or a
 * missing operand. */
int harness_options(int argc, char **argv, int *parallel, int *warmup_us, int *repetitions);
/* The same for programs whose operands are optional: the index of the
 * first operand (argc when none), or -1 on a bad option. */
int harness_flags(int argc, char **argv, int *parallel, int *warmup_us, int *repetitions);
void set_calibration_file(const char *path);

/* Result lines: "<name> <value> <unit>", machine-parseable. Each helper
 * prints the median line, then "<name>.min" (latency of the shortest
 * interval) or "<name>.max" (bandwidth of the shortest interval, of one
 * process when parallel: `bytes` counts all processes, `.max` divides by
 * the number of processes). */
void nano(const char *name, uint64_t n); /* ns per operation */
void micro(const char *name, uint64_t n); /* us per operation */
void mb(const char *name, uint64_t bytes); /* MB/s over the interval */

#endif
