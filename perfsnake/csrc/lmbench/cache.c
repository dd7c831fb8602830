/*
 * cache: the cache levels seen from memory latency (lmbench's cache): the
 * time per load of a pointer chain (one pointer per LINE bytes, default 64,
 * pages in a random order and a page's lines bit-reversed: memchain.h) over
 * lmbench's sizes, 512 bytes to MAX_KB (default 32 MB, lmbench's) in
 * quarter steps (512, 640, 768, 896, 1024, 1280, ...), each size timed in
 * each of three sweeps over the sizes (up, down, up).
 *
 * Detection, lmbench's idea (latency steps over sizes) in a form that
 * tolerates a gradual step (a physically indexed cache filled from random
 * pages starts missing before it is full) and a loaded machine:
 *  - each size's latency is its shortest interval's over the sweeps (a
 *    preempted interval is only longer, and a burst of load that slowed
 *    consecutive sizes in one sweep missed them in another; lmbench uses
 *    the median of one sweep), each the median of it and
 *    its two neighbours, made non-decreasing;
 *  - a size is flat when the latency one doubling later is within 1.3 x
 *    its own; a run of at least 2 flat sizes is a plateau, whose latency is
 *    the median of its sizes within 1.15 x its lowest;
 *  - each step found is confirmed: the five sizes past it are timed three
 *    more times and the levels found again, until a round changes none
 *    (at most four rounds; a step made by load goes, a cache's stays);
 *  - memory's latency is the largest size's (lmbench's; after the two
 *    steps above, so a last sample faster than the one before does not
 *    count), and the plateau that reaches it is memory's; each other
 *    plateau is a cache level unless its latency is above half of
 *    memory's (lmbench's rule: not a cache);
 *  - a level's size is the largest size whose latency is at most the
 *    geometric mean of the level's and the next one's (or memory's),
 *    rounded to the nearest 2^N or 1.5 x 2^N (lmbench's "legal" sizes);
 *  - its parallelism is par_mem's at half its size (from the shortest
 *    intervals too), memory's at the smallest size within 1 % of memory's
 *    latency (lmbench's).
 * lmbench also swaps out pages that collide in the cache before it
 * measures; we do not, so a level's size can come out lower where pages
 * collide. Not scalable, as in lmbench.
 *
 * usage: cache [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE] [-M MAX_KB]
 * Prints one comment line per size and sweep and per parallelism timed,
 * one per size with its sweeps' median and shortest intervals, then
 * "cache <ns> ns" (the largest size's median interval, as the other
 * programs' first line), "cache.min", "cache.levels <n> levels",
 * per level k = 1..n "cache.l<k>_bytes", "cache.l<k>_ns",
 * "cache.l<k>_parallelism", then "cache.memory_ns" and
 * "cache.memory_parallelism".
 */
#define _GNU_SOURCE
#include "memchain.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLAT 1.3
#define SAME 1.15
#define MAX_SIZES 128
#define MAX_LEVELS 4 /* the catalog's metrics: l1_ to l4_ */
#define PASSES 3
#define ROUNDS 4 /* of confirmation */
#define CONFIRM 3

struct plateau {
	int first, last; /* sample indices */
	double ns;
};

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median3(double a, double b, double c)
{
	double v[3] = { a, b, c };

	qsort(v, 3, sizeof(v[0]), by_value);
	return v[1];
}

/* The nearest of 2^N and 1.5 x 2^N to `bytes`, by ratio (a log scale). */
static size_t legal_size(size_t bytes)
{
	size_t best = 1;
	double distance = DBL_MAX;

	for (size_t p = 1; p <= ((size_t)1 << 40); p *= 2)
		for (int k = 0; k < 2; k++) {
			size_t candidate = k ? p + p / 2 : p;
			double d = bytes > candidate ? (double)bytes / (double)candidate : (double)candidate / (double)bytes;

			if (candidate >= 1 && d < distance) {
				distance = d;
				best = candidate;
			}
		}
	return best;
}

/* The median of the plateau's latencies within SAME x its lowest. */
static double plateau_ns(const double *lat, int first, int last)
{
	double v[MAX_SIZES], low = DBL_MAX;
	int n = 0;

	for (int i = first; i <= last; i++)
		low = lat[i] < low ? lat[i] : low;
	for (int i = first; i <= last; i++)
		if (lat[i] <= SAME * low)
			v[n++] = lat[i];
	qsort(v, (size_t)n, sizeof(v[0]), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One timing of `size` bytes: *median its median interval's time per load,
 * *least the shortest seen so far (or this one's, when !seen). */
static int time_size(struct chain *c, size_t size, size_t line, int warmup, int reps, const char *label,
		     double *median, double *least, int seen)
{
	double shortest;

	chain_lines(c, size, line, 1);
	if (chain_time(c, 1, warmup, reps, label, median, &shortest))
		return -1;
	if (!seen || shortest < *least)
		*least = shortest;
	return 0;
}

/* The levels seen in the shortest intervals `least` (the rules above):
 * fills lat, plateaus, levels and *memory; returns the number of levels. */
static int find_levels(const double *least, int n, double *lat, struct plateau *plateaus, int *nplateaus,
		       struct plateau **levels, double *memory)
{
	int nlevels = 0;

	for (int i = 0; i < n; i++) {
		lat[i] = i == 0 || i == n - 1 ? least[i] : median3(least[i - 1], least[i], least[i + 1]);
		if (i > 0 && lat[i] < lat[i - 1])
			lat[i] = lat[i - 1];
	}
	*memory = lat[n - 1];
	*nplateaus = 0;
	/* Plateaus: runs of flat sizes (the last four look at the largest size). */
	for (int i = 0; i < n;) {
		int j = i;

		while (j < n && (j + 4 < n ? lat[j + 4] : lat[n - 1]) <= FLAT * lat[j])
			j++;
		if (j - i >= 2) {
			plateaus[*nplateaus].first = i;
			plateaus[*nplateaus].last = j - 1;
			plateaus[*nplateaus].ns = plateau_ns(lat, i, j - 1);
			(*nplateaus)++;
		}
		i = j > i ? j : i + 1;
	}
	for (int p = 0; p < *nplateaus && nlevels < MAX_LEVELS; p++)
		if (plateaus[p].last < n - 1 && plateaus[p].ns <= 0.5 * *memory)
			levels[nlevels++] = &plateaus[p];
	return nlevels;
}

static int parallelism(struct chain *c, size_t len, size_t line, int warmup, int reps, double *best)
{
	char label[64];
	double one, one_min;

	chain_lines(c, len, line, 1);
	snprintf(label, sizeof(label), "cache parallelism %zu bytes,", len);
	return chain_parallelism(c, warmup, reps, label, 1, &one, &one_min, best);
}

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES, n = 0, nplateaus = 0, nlevels;
	long line = 64, max_kb = 32 * 1024;
	struct chain c = { 0 };
	size_t sizes[MAX_SIZES], len;
	double raw[MAX_SIZES], medians[MAX_SIZES][PASSES], least[MAX_SIZES], lat[MAX_SIZES], memory, memory_par;
	struct plateau plateaus[MAX_SIZES], *levels[MAX_LEVELS];
	char label[64], name[64];

	first = chain_options(argc, argv, &warmup, &reps, &line, &max_kb);
	if (first != argc || line < (long)sizeof(void *) || (line & (line - 1)) || line > 512 || max_kb < 64)
		goto usage;
	len = (size_t)max_kb * 1024;
	if (chain_reserve(&c, len)) {
		perror("cache: mmap");
		return 1;
	}
	/* lmbench's samples: 512 bytes, then four steps per doubling. */
	for (size_t size = 512, step = 128; size <= len && n < MAX_SIZES; step *= 2)
		for (int k = 0; k < 4 && size <= len && n < MAX_SIZES; k++, size += step)
			if (size >= 2 * (size_t)line)
				sizes[n++] = size;
	/* PASSES sweeps, alternately up and down: a burst of load on the machine
	 * (on a VM, another vCPU on the same core doubles even L1's latency)
	 * slows a run of consecutive sizes, which one sweep would take for a
	 * step; a size's shortest interval over the sweeps is past the burst. */
	for (int pass = 0; pass < PASSES; pass++)
		for (int k = 0; k < n; k++) {
			int i = pass % 2 ? n - 1 - k : k;

			snprintf(label, sizeof(label), "cache %zu bytes, sweep %d:", sizes[i], pass + 1);
			if (time_size(&c, sizes[i], (size_t)line, warmup, reps, label, &medians[i][pass], &least[i], pass))
				return 1;
		}
	/* A burst can outlast the sweeps at a few sizes: each step found is
	 * confirmed by timing the sizes just past it again (CONFIRM times,
	 * interleaved), until a round leaves the levels as they were. */
	nlevels = find_levels(least, n, lat, plateaus, &nplateaus, levels, &memory);
	for (int round = 1; round <= ROUNDS; round++) {
		int again[MAX_SIZES] = { 0 }, before[MAX_LEVELS], nbefore = nlevels, same;

		for (int k = 0; k < nlevels; k++) {
			before[k] = levels[k]->last;
			for (int i = levels[k]->last + 1; i <= levels[k]->last + 5 && i < n; i++)
				again[i] = 1;
		}
		for (int t = 0; t < CONFIRM; t++)
			for (int i = 0; i < n; i++) {
				double median;

				snprintf(label, sizeof(label), "cache %zu bytes, confirm %d:", sizes[i], round);
				if (again[i] && time_size(&c, sizes[i], (size_t)line, warmup, reps, label, &median, &least[i], 1))
					return 1;
			}
		nlevels = find_levels(least, n, lat, plateaus, &nplateaus, levels, &memory);
		same = nlevels == nbefore;
		for (int k = 0; same && k < nlevels; k++)
			same = levels[k]->last == before[k];
		if (same)
			break;
	}
	for (int i = 0; i < n; i++) {
		qsort(medians[i], PASSES, sizeof(medians[i][0]), by_value);
		raw[i] = medians[i][PASSES / 2];
		printf("# cache %zu bytes: %.4f ns, min %.4f ns\n", sizes[i], raw[i], least[i]);
	}
	printf("# cache %d sizes, %d plateaus, memory %.4f ns\n", n, nplateaus, memory);
	result_line("cache", raw[n - 1], "ns");
	result_line("cache.min", least[n - 1], "ns");
	printf("cache.levels %d levels\n", nlevels);
	for (int k = 0; k < nlevels; k++) {
		/* edge^2: the squared geometric mean, so no libm */
		double next = k + 1 < nlevels ? levels[k + 1]->ns : memory, edge2 = levels[k]->ns * next, par;
		int last = levels[k]->last;
		size_t bytes, half;

		while (last + 1 < n && lat[last + 1] * lat[last + 1] <= edge2)
			last++;
		bytes = legal_size(sizes[last]);
		half = bytes / 2 >= 32 * (size_t)line ? bytes / 2 : 32 * (size_t)line;
		if (half > len)
			half = len;
		if (parallelism(&c, half, (size_t)line, warmup, reps, &par))
			return 1;
		snprintf(name, sizeof(name), "cache.l%d_bytes", k + 1);
		printf("%s %zu bytes\n", name, bytes);
		snprintf(name, sizeof(name), "cache.l%d_ns", k + 1);
		result_line(name, levels[k]->ns, "ns");
		snprintf(name, sizeof(name), "cache.l%d_parallelism", k + 1);
		result_line(name, par, "x");
	}
	for (first = n - 1; first > 0 && lat[first - 1] >= 0.99 * memory; first--)
		;
	if (parallelism(&c, sizes[first] >= 32 * (size_t)line ? sizes[first] : 32 * (size_t)line, (size_t)line, warmup,
			reps, &memory_par))
		return 1;
	result_line("cache.memory_ns", memory, "ns");
	result_line("cache.memory_parallelism", memory_par, "x");
	return 0;
usage:
	fprintf(stderr, "usage: cache [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE, a power of two 8..512] "
		"[-M MAX_KB, >= 64] (not scalable: no -P)\n");
	return 2;
}
