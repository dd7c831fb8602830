/*
 * tlb: the number of pages the data TLB covers (lmbench's tlb). For N
 * pages, the time per load of two chains of N pointers each: one pointer
 * per page over N pages in a random order (every load a new page), and
 * one pointer per LINE bytes (default 64) over N lines packed in N x LINE
 * bytes (the same number of cache lines, few pages). While the TLB holds N
 * pages, the two take the same time; lmbench's threshold: when the first
 * takes more than 1.15 x the second, the TLB is missing. N doubles from 8
 * (up to MAX_KB of pages, default 64 MB) until it does, then a binary
 * search between the last two finds the largest N that still fits. The
 * decisions compare the shortest intervals (lmbench: the medians): a
 * preemption only lengthens an interval, and on a loaded machine the
 * medians took 8-page chains for a TLB effect in 3 of 5 runs.
 * 4 KB pages (MADV_NOHUGEPAGE). Not scalable, as in lmbench.
 *
 * usage: tlb [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE] [-M MAX_KB]
 * Prints one comment line per chain timed, then "tlb <ns> ns", the cost of
 * a TLB miss (lmbench's -c figure: page chain minus line chain, per load,
 * at twice the pages found), "tlb.min" (the same from the shortest
 * intervals) and "tlb.pages <N> pages"; no TLB effect up to MAX_KB: a
 * message and exit status 1.
 */
#define _GNU_SOURCE
#include "memchain.h"

#include <stdio.h>
#include <stdlib.h>

#define THRESHOLD 1.15

struct times {
	double pages, lines, pages_min, lines_min;
};

static int measure(struct chain *c, size_t n, size_t line, int warmup, int reps, struct times *t)
{
	char label[64];

	chain_pages(c, n);
	snprintf(label, sizeof(label), "tlb %zu pages, a page per load:", n);
	if (chain_time(c, 1, warmup, reps, label, &t->pages, &t->pages_min))
		return -1;
	chain_lines(c, n * line, line, 1);
	snprintf(label, sizeof(label), "tlb %zu pages, a line per load:", n);
	return chain_time(c, 1, warmup, reps, label, &t->lines, &t->lines_min);
}

int main(int argc, char **argv)
{
	int first, warmup = 0, reps = TRIES;
	long line = 64, max_kb = 64 * 1024;
	struct chain c = { 0 };
	struct times t;
	size_t n, lower = 0, upper = 0, max_pages;

	first = chain_options(argc, argv, &warmup, &reps, &line, &max_kb);
	if (first != argc || line < (long)sizeof(void *) || (line & (line - 1)) || line > 4096 || max_kb < 64) {
		fprintf(stderr, "usage: tlb [-W warmup_us] [-N repetitions] [-C calfile] [-L LINE, a power of two 8..4096] "
			"[-M MAX_KB, >= 64] (not scalable: no -P)\n");
		return 2;
	}
	if (chain_reserve(&c, (size_t)max_kb * 1024)) {
		perror("tlb: mmap");
		return 1;
	}
	max_pages = (size_t)max_kb * 1024 / c.pagesize;
	for (n = 8; n <= max_pages; n *= 2) {
		if (measure(&c, n, (size_t)line, warmup, reps, &t))
			return 1;
		if (t.pages_min > THRESHOLD * t.lines_min) {
			lower = n / 2;
			upper = n;
			break;
		}
	}
	if (!upper) {
		fprintf(stderr, "tlb: no TLB effect up to %zu pages\n", max_pages);
		return 1;
	}
	while (lower + 1 < upper) {
		n = lower + (upper - lower) / 2;
		if (measure(&c, n, (size_t)line, warmup, reps, &t))
			return 1;
		if (t.pages_min > THRESHOLD * t.lines_min)
			upper = n;
		else
			lower = n;
	}
	if (chain_reserve(&c, 2 * lower * c.pagesize) || measure(&c, 2 * lower, (size_t)line, warmup, reps, &t))
		return 1;
	result_line("tlb", t.pages - t.lines, "ns");
	result_line("tlb.min", t.pages_min - t.lines_min, "ns");
	printf("tlb.pages %zu pages\n", lower);
	return 0;
}
