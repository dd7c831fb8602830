/*
 * line: the cache line size (lmbench's line), by the time per load of a
 * pointer chain through MAX_KB of memory (default 64 MB) with one pointer
 * every STRIDE bytes, STRIDE = 8, 16, ..., page size / 4: the pages in a
 * random order, a page's strides in bit-reversed order (memchain.h). While
 * STRIDE is below the line, several loads share a line and doubling the
 * stride nearly doubles the time; from the line on, every load misses.
 * The line is the stride after which doubling stops nearly doubling: once
 * a doubling has cost more than RISE x, the first that costs less is twice
 * the line. lmbench's rule (a jump over 1.3 x, then a level-off under
 * 1.15 x, strides up to page size / 16) finds nothing on machines whose
 * time keeps rising past the line (a 4 KB page's TLB miss and its
 * prefetchers shared by fewer loads as the stride grows: +25-45 % per
 * doubling past the line, against +65-100 % below it, on a 2-vCPU Xeon
 * VM); 1.5 x lies between the two, and the sweep goes to page size / 4 so
 * that a 256-byte line can level off. Where the L2 fetches lines in
 * pairs (Intel's adjacent-line prefetch), the figure is 128 bytes, as
 * lmbench's: a "# line coherency_line_size" comment gives the kernel's
 * figure beside it. Not scalable, as in lmbench.
 *
 * A preempted interval is only longer, so one noisy stride can hide the
 * rise or the level-off: when a sweep finds nothing, the strides are swept
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
#define RISE 1.5

/* The kernel's line size (CPU 0's level-1 data cache), as a comment: where
 * the hardware fetches lines in pairs, the two differ, and a reader sees
 * why. Nothing is printed where sysfs has no figure. */
static void coherency_comment(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size", "r");
	unsigned size;

	if (!f)
		return;
	if (fscanf(f, "%u", &size) == 1)
		printf("# line coherency_line_size %u bytes\n", size);
	fclose(f);
}
#define MAX_STRIDES 16

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES, sweep;
	long max_kb = 64 * 1024;
	struct chain c = { 0 };
	double median[MAX_STRIDES], least[MAX_STRIDES], m, l;
	size_t strides[MAX_STRIDES], found = 0, count, len;
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
		int rose = 0;

		count = 0;
		for (size_t stride = sizeof(void *); stride <= c.pagesize / 4 && count < MAX_STRIDES; stride *= 2, count++) {
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
			if (median[count] > RISE * median[count - 1])
				rose = 1;
			else if (rose) {
				found = count - 1;
				break;
			}
		}
	}
	if (!found) {
		fprintf(stderr, "line: no line size found (no doubling of the stride costing over %.1f x, then one under, by strides up to %zu bytes, in %d sweeps)\n",
			RISE, c.pagesize / 4, SWEEPS);
		return 1;
	}
	result_line("line", median[found], "ns");
	result_line("line.min", least[found], "ns");
	printf("line.bytes %zu bytes\n", strides[found]);
	coherency_comment();
	return 0;
}
