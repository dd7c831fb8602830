/*
 * par_mem: memory-load parallelism (lmbench's par_mem): how many
 * independent loads the memory system overlaps, for an array of SIZE_KB.
 * One pointer chain per LINE bytes (default 64) over the array, the pages
 * in a random order and a page's lines in bit-reversed order (memchain.h);
 * k walkers evenly spaced along it, k = 1..16, each timed per load. The
 * parallelism at k is the time per load of one walker over that of k
 * (k walkers' loads overlap: k times faster at best); the result is the
 * largest over k, and, as lmbench, k stops growing once it exceeds 4 x
 * the best so far. lmbench's summary ("mem par") is the largest array's.
 * Not scalable, as in lmbench.
 *
 * usage: par_mem [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE] SIZE_KB
 * Prints one comment line per k, then "par_mem.<size>k <ns> ns" (one
 * walker's time per load), ".min", and "par_mem.<size>k.parallelism <p> x".
 */
#define _GNU_SOURCE
#include "memchain.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES;
	long line = 64, kb;
	struct chain c = { 0 };
	double one = 0, one_min = 0, best = 1.0;
	char label[64], name[64];
	size_t len;

	first = chain_options(argc, argv, &warmup, &reps, &line, NULL);
	if (first < 0 || argc - first != 1 || line < (long)sizeof(void *) || (line & (line - 1)) || line > 4096)
		goto usage;
	kb = atol(argv[first]);
	len = (size_t)kb * 1024;
	if (kb < 1 || len < (size_t)line * 2 * MAX_WIDTH)
		goto usage;
	if (chain_reserve(&c, len)) {
		perror("par_mem: mmap");
		return 1;
	}
	chain_lines(&c, len, (size_t)line, 1);
	snprintf(label, sizeof(label), "par_mem %ldk,", kb);
	if (chain_parallelism(&c, warmup, reps, label, 0, &one, &one_min, &best))
		return 1;
	snprintf(name, sizeof(name), "par_mem.%ldk", kb);
	result_line(name, one, "ns");
	snprintf(name, sizeof(name), "par_mem.%ldk.min", kb);
	result_line(name, one_min, "ns");
	snprintf(name, sizeof(name), "par_mem.%ldk.parallelism", kb);
	result_line(name, best, "x");
	return 0;
usage:
	fprintf(stderr, "usage: par_mem [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE, a power of two 8..4096] "
		"SIZE_KB (at least 32 lines) (not scalable: no -P)\n");
	return 2;
}
