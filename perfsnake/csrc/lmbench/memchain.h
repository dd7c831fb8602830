/*
 * Pointer chains through memory for the memory-hierarchy tools (line, tlb,
 * par_mem, cache): lmbench3's layouts (its lib_mem), written anew.
 *
 * A chain is a circular list of pointers, each load depending on the one
 * before. chain_lines() puts one pointer every `line` bytes: the pages in a
 * random order (or in address order), and inside a page the lines in
 * bit-reversed order (0, half, quarter, three quarters, ...), which no
 * prefetcher follows and which spreads a partial page's lines over it.
 * chain_pages() puts one pointer in each page, the pages in a random order,
 * at a word offset that changes from page to page (so the pointers do not
 * all fall in one cache set). Up to MAX_WIDTH independent walkers can
 * follow a chain at once, evenly spaced along it: chase_width[k - 1]
 * advances k walkers HOPS times each per iteration.
 *
 * The buffer is mmap()ed with MADV_NOHUGEPAGE: the chains, the TLB's above
 * all, are about 4 KB pages.
 */
#ifndef PERFSNAKE_MEMCHAIN_H
#define PERFSNAKE_MEMCHAIN_H

#include <stddef.h>

#include "bench.h"

#define MAX_WIDTH 16
#define HOPS 100

struct chain {
	char *buf;
	size_t mapped; /* bytes mapped at buf */
	size_t pagesize;
	size_t nodes; /* pointers in the chain */
	void **start[MAX_WIDTH]; /* where each walker is (they move on from call to call) */
	unsigned seed; /* the page order's */
};

/* Maps at least `len` bytes (once; a larger chain maps again). 0 or -1. */
int chain_reserve(struct chain *c, size_t len);
void chain_release(struct chain *c);

/* One pointer per `line` bytes over the first `len` bytes (len >= 2 lines,
 * line a power of two >= 8 and <= the page size), pages shuffled or not. */
void chain_lines(struct chain *c, size_t len, size_t line, int shuffle_pages);
/* chain_lines()' pages and lines, but visited a line at a time across
 * each run of `group` consecutive pages of the page order: line j of
 * every page of the run, then line j + 1 of each, ... (lmbench's
 * lat_dram_page: each load in another page). */
void chain_groups(struct chain *c, size_t len, size_t line, size_t group);
/* One pointer per page over `npages` pages (>= 2), shuffled but the first. */
void chain_pages(struct chain *c, size_t npages);
/* `width` walkers evenly spaced along the chain (the last chain built). */
void chain_walkers(struct chain *c, int width);

extern const benchmp_f chase_width[MAX_WIDTH];

/* The time per load of `width` walkers (set by chain_walkers) through the
 * harness: *median_ns (the median interval's) and *min_ns (the shortest's).
 * Prints one comment line ("# <label> <median> ns, min <min> ns") and the
 * harness's note. 0, or -1 when benchmp failed. */
int chain_time(struct chain *c, int width, int warmup, int reps, const char *label, double *median_ns,
	       double *min_ns);

/* par_mem's figure for the chain built last: k = 1..16 walkers spaced
 * along it, each timed (a comment line "# <label> <k> walker(s): ..."
 * each); *best is the largest of one walker's time per load over k
 * walkers', and k stops growing once it exceeds 4 x the best so far (as
 * lmbench). *one and *one_min: one walker's median and shortest time per
 * load. by_min: the times compared are the shortest intervals' instead of
 * the medians' (cache's: a preempted interval is only longer). 0, or -1
 * when benchmp failed. */
int chain_parallelism(struct chain *c, int warmup, int reps, const char *label, int by_min, double *one,
		      double *one_min, double *best);

/* The harness options of these tools, which are not scalable (-P 1 only):
 * -W, -N, -C, -R, plus -L LINE and -M MAX_KB where `line`/`max_kb` are
 * given (NULL: not taken). Returns the index of the first operand, or -1
 * (usage). */
int chain_options(int argc, char **argv, int *warmup, int *reps, long *line, long *max_kb);

#endif
