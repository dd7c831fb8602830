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
 * usage: line [-W warmup_us] [-N repetitions] [-C calfile] [-M MAX_KB]
 * Prints one comment line per stride, then "line <ns> ns" (the time per
 * load at the line size found, a miss), "line.min" and
 * "line.bytes <size> bytes"; nothing found: a message and exit status 1.
 */
#define _GNU_SOURCE
#include "memchain.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES;
	long max_kb = 64 * 1024;
	struct chain c = { 0 };
	double median[16], least[16], baseline = 0;
	size_t strides[16], found = 0, count = 0, len;
	int jumped = 0;
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
	for (size_t stride = sizeof(void *); stride <= c.pagesize / 16; stride *= 2, count++) {
		chain_lines(&c, len, stride, 1);
		snprintf(label, sizeof(label), "line stride %zu:", stride);
		if (chain_time(&c, 1, warmup, reps, label, &median[count], &least[count]))
			return 1;
		strides[count] = stride;
		if (count > 0) {
			if (median[count] > 1.3 * baseline)
				jumped = 1;
			else if (jumped && median[count] < 1.15 * baseline) {
				found = count - 1;
				break;
			}
		}
		baseline = median[count];
	}
	if (!jumped || found == 0) {
		fprintf(stderr, "line: no line size found (no jump, then a plateau, by %zu-byte strides)\n",
			c.pagesize / 16);
		return 1;
	}
	result_line("line", median[found], "ns");
	result_line("line.min", least[found], "ns");
	printf("line.bytes %zu bytes\n", strides[found]);
	return 0;
}
