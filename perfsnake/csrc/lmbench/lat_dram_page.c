/*
 * lat_dram_page: the cost of changing DRAM pages (lmbench's lat_dram_page):
 * the time per load of two chains over the same MAX_KB of memory (default
 * 64 MB), one pointer every LINE bytes (default 8, lmbench's): in the first
 * (a "page hit" chain) every line of a page is loaded before the next page,
 * the pages in a random order and a page's lines in bit-reversed order; in
 * the second the same pages and lines, but a line at a time across each run
 * of GROUP pages (default 16) of that order, so every load is in another
 * page. lmbench's figure is the second minus the first when the first is
 * below 0.95 x the second, else 0. Not scalable, as in lmbench.
 *
 * usage: lat_dram_page [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE] [-M MAX_KB] [GROUP]
 * Prints one comment line per chain, then "lat_dram_page <ns> ns" (that
 * figure), ".min" (the same from the shortest intervals), and
 * "lat_dram_page.hit" and ".miss", each chain's time per load.
 */
#define _GNU_SOURCE
#include "memchain.h"

#include <stdio.h>
#include <stdlib.h>

static double difference(double hit, double miss)
{
	return hit < 0.95 * miss ? miss - hit : 0.0;
}

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES;
	long line = sizeof(void *), max_kb = 64 * 1024, group = 16;
	struct chain c = { 0 };
	double hit, hit_min, miss, miss_min;
	size_t len;

	first = chain_options(argc, argv, &warmup, &reps, &line, &max_kb);
	if (first < 0 || argc - first > 1 || line < (long)sizeof(void *) || (line & (line - 1)) || line > 4096 ||
	    max_kb < 64)
		goto usage;
	if (first < argc)
		group = atol(argv[first]);
	len = (size_t)max_kb * 1024;
	if (group < 2)
		goto usage;
	if (chain_reserve(&c, len)) {
		perror("lat_dram_page: mmap");
		return 1;
	}
	chain_lines(&c, len / c.pagesize * c.pagesize, (size_t)line, 1);
	if (chain_time(&c, 1, warmup, reps, "lat_dram_page a page at a time:", &hit, &hit_min))
		return 1;
	chain_groups(&c, len, (size_t)line, (size_t)group);
	if (chain_time(&c, 1, warmup, reps, "lat_dram_page a line at a time across pages:", &miss, &miss_min))
		return 1;
	result_line("lat_dram_page", difference(hit, miss), "ns");
	result_line("lat_dram_page.min", difference(hit_min, miss_min), "ns");
	result_line("lat_dram_page.hit", hit, "ns");
	result_line("lat_dram_page.miss", miss, "ns");
	return 0;
usage:
	fprintf(stderr, "usage: lat_dram_page [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE, a power of two 8..4096] "
		"[-M MAX_KB, >= 64] [GROUP, >= 2] (not scalable: no -P)\n");
	return 2;
}
