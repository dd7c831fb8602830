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

/* The median interval (by time per iteration), nanoseconds, and its
 * iteration count: divide the one by the other. Intervals can differ in
 * iterations, since the harness re-sizes them (lmbench3's rule: an interval
 * is kept when it lasted more than 0.95 x the target, and the count is
 * re-sized when one falls outside [0.99, 1.2] x the target). */
uint64_t gettime(void);
uint64_t get_n(void);
/* Shortest interval per iteration over all repetitions (and children): the
 * paper uses the minimum where it wants a bound rather than a
 * representative value. get_n_min() is its own iteration count. */
uint64_t gettime_min(void);
uint64_t get_n_min(void);
uint64_t now_ns(void);

/* The timing interval chosen for the clock (the paper's delta method).
 * LMBENCH_ENOUGH_US fixes it; otherwise a calibration cache file
 * (LMBENCH_CALIBRATION, else -C FILE) keyed by host, CPU model, CPUs,
 * kernel, clocksource, clock resolution and method is read, or written
 * after calibrating (always calibrating with -R or LMBENCH_RECALIBRATE=1).
 * When no candidate passes, the shortest is used and one stderr line says
 * so; the cache records "fallback" and every result's note line too. */
uint64_t timing_interval_us(void);

/* Parses -P parallel, -W warmup_us, -N repetitions, -C calibration_file,
 * -R (recalibrate: ignore the cached interval and replace it) and
 * -A same|different|unpinned (placement of an IPC benchmark's two ends);
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
/* One "<name> <value> <unit>" line with at least 6 significant digits in
 * fixed notation, for programs that print figures of their own. */
void result_line(const char *name, double value, const char *unit);
/* "# benchmp interval_us=... calibration=cache|calibrated|fallback|fixed
 * parallel=P intervals=A kept=K discarded=D out_of_window=O resized=R":
 * how the last benchmp() went (nano/micro/mb print it after their lines). */
void harness_note(void);

/* Placement of the two ends of an IPC benchmark (-A): both on one CPU,
 * on two different CPUs, or left to the scheduler (the default). Each end
 * calls place_end(0) (the measuring side) or place_end(1) (its partner)
 * after the fork; returns the CPU chosen (0 when unpinned). */
enum { PLACE_UNPINNED, PLACE_SAME, PLACE_DIFFERENT };
int place_end(int end);

#endif
