/*
 * line: the cache line size (lmbench's line), by the time per load of a
 * pointer chain through MAX_KB of memory (default 64 MB) with one pointer
 * every STRIDE bytes, STRIDE = 8, 16, ..., page size / 16: the pages in a
 * random order, a page's strides in bit-reversed order (memchain.h). While
 * STRIDE is below the line, several loads share a line; from the line on,
 * every load misses. lmbench's rule: once a stride has taken more than
 * 1.3 x the one before (a jump), the first stride taking less than 1.15 x
 * the one before is twice the line. Not scalable, as in lmbench.
 *
 * A preempted interval is only longer, so one noisy stride can hide the
 * jump or the plateau: when a sweep finds nothing, the strides are swept
 * again (up to SWEEPS in all) and the rule reads, for each stride, the
 * least of its sweeps' medians.
 *
 * usage: line [-W warmup_us] [-N repetitions] [-C calfile] [-M MAX_KB]
 * Prints one comment line per stride and sweep ("# line stride <s>:", then
 * "# line stride <s> (sweep <k>):"), then "line <ns> ns" (the time per
 * load at the line size found, a miss), "line.min" and
 * "line.bytes <size> bytes"; nothing found: a message and exit status 1.
 */
#define _GNU_SOURCE
#include "memchain.h"

#include <stdio.h>
#include <stdlib.h>

#define SWEEPS 3

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES, sweep;
	long max_kb = 64 * 1024;
	struct chain c = { 0 };
	double median[16], least[16], m, l;
	size_t strides[16], found = 0, count, len;
	char label[64];

	first = chain_options(argc, argv, &warmup, &reps, NULL, &max_kb);
	if (first != argc || max_kb < 64) {
		fprintf(stderr, "usage: line [-W warmup_us] [-N repetitions] [-C calfile] [-M MAX_KB, >= 64] (not scalable: no -P)\n");
		return 2;
	}
	len = (size_t)max_kb * 1024;
	if (chain_reserve(&c, len)) {
		perror("line: mmap");
		return 1;
	}
	for (sweep = 1; sweep <= SWEEPS && !found; sweep++) {
		int jumped = 0;

		count = 0;
		for (size_t stride = sizeof(void *); stride <= c.pagesize / 16; stride *= 2, count++) {
			chain_lines(&c, len, stride, 1);
			if (sweep == 1)
				snprintf(label, sizeof(label), "line stride %zu:", stride);
			else
				snprintf(label, sizeof(label), "line stride %zu (sweep %d):", stride, sweep);
			if (chain_time(&c, 1, warmup, reps, label, &m, &l))
				return 1;
			if (sweep == 1 || m < median[count])
				median[count] = m;
			if (sweep == 1 || l < least[count])
				least[count] = l;
			strides[count] = stride;
			if (count == 0)
				continue;
			if (median[count] > 1.3 * median[count - 1])
				jumped = 1;
			else if (jumped && median[count] < 1.15 * median[count - 1]) {
				found = count - 1;
				break;
			}
		}
	}
	if (!found) {
		fprintf(stderr, "line: no line size found (no jump, then a plateau, by %zu-byte strides, in %d sweeps)\n",
			c.pagesize / 16, SWEEPS);
		return 1;
	}
	result_line("line", median[found], "ns");
	result_line("line.min", least[found], "ns");
	printf("line.bytes %zu bytes\n", strides[found]);
	return 0;
}
