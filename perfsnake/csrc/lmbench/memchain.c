/*
 * Pointer chains through memory (memchain.h).
 */
#define _GNU_SOURCE
#include "memchain.h"

#include "calibrate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int chain_reserve(struct chain *c, size_t len)
{
	if (!c->pagesize)
		c->pagesize = (size_t)sysconf(_SC_PAGESIZE);
	len = (len + c->pagesize - 1) / c->pagesize * c->pagesize;
	if (c->buf && c->mapped >= len)
		return 0;
	chain_release(c);
	c->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->buf == MAP_FAILED) {
		c->buf = NULL;
		return -1;
	}
	madvise(c->buf, len, MADV_NOHUGEPAGE);
	c->mapped = len;
	return 0;
}

void chain_release(struct chain *c)
{
	if (c->buf)
		munmap(c->buf, c->mapped);
	c->buf = NULL;
	c->mapped = 0;
}

/* i's lowest `bits` bits, reversed. */
static size_t reverse_bits(size_t i, int bits)
{
	size_t r = 0;

	for (int b = 0; b < bits; b++)
		r |= ((i >> b) & 1) << (bits - 1 - b);
	return r;
}

static int log2_of(size_t n)
{
	int bits = 0;

	while ((size_t)1 << bits < n)
		bits++;
	return bits;
}

/* A small generator of our own, so the page order is the same on every
 * run and for every chain built with the same seed. */
static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* order[0..n) = 0..n-1, shuffled from index `from` on. */
static size_t *page_order(size_t n, int shuffle, size_t from, unsigned seed)
{
	size_t *order = malloc(n * sizeof(*order));
	uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;

	if (!order)
		abort();
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = n; shuffle && i > from + 1; i--) {
		size_t j = from + (size_t)(next_random(&x) % (i - from)), t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	return order;
}

/* Links nodes[0] -> nodes[1] -> ... -> nodes[n - 1] -> nodes[0]; the chain
 * starts at nodes[0]. Keeps the order for chain_walkers(). */
static char **chain_nodes;

static void link_nodes(struct chain *c, char **nodes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*(void **)nodes[i] = nodes[(i + 1) % n];
	free(chain_nodes);
	chain_nodes = nodes;
	c->nodes = n;
	chain_walkers(c, 1);
}

void chain_lines(struct chain *c, size_t len, size_t line, int shuffle_pages)
{
	size_t per_page = c->pagesize / line, n = len / line, pages = (n + per_page - 1) / per_page, k = 0;
	int bits = log2_of(per_page);
	size_t *order = page_order(pages, shuffle_pages, 0, c->seed);
	char **nodes = malloc(n * sizeof(*nodes));

	if (!nodes)
		abort();
	for (size_t p = 0; p < pages; p++) {
		char *page = c->buf + order[p] * c->pagesize;
		/* A partial page (the last one in address order) has fewer lines,
		 * spread over it by the bit reversal. */
		size_t here = order[p] == pages - 1 ? n - (pages - 1) * per_page : per_page;
		for (size_t j = 0; j < here; j++)
			nodes[k++] = page + reverse_bits(j, bits) * line;
	}
	free(order);
	link_nodes(c, nodes, n);
}

void chain_groups(struct chain *c, size_t len, size_t line, size_t group)
{
	size_t per_page = c->pagesize / line, pages = len / c->pagesize, k = 0;
	int bits = log2_of(per_page);
	size_t *order = page_order(pages, 1, 0, c->seed);
	char **nodes = malloc(pages * per_page * sizeof(*nodes));

	if (!nodes)
		abort();
	for (size_t first = 0; first < pages; first += group) {
		size_t end = first + group < pages ? first + group : pages;
		for (size_t j = 0; j < per_page; j++)
			for (size_t p = first; p < end; p++)
				nodes[k++] = c->buf + order[p] * c->pagesize + reverse_bits(j, bits) * line;
	}
	free(order);
	link_nodes(c, nodes, k);
}

void chain_pages(struct chain *c, size_t npages)
{
	size_t words = c->pagesize / sizeof(void *);
	int bits = log2_of(words);
	size_t *order = page_order(npages, 1, 1, c->seed);
	char **nodes = malloc(npages * sizeof(*nodes));

	if (!nodes)
		abort();
	for (size_t i = 0; i < npages; i++)
		nodes[i] = c->buf + order[i] * c->pagesize + reverse_bits(i % words, bits) * sizeof(void *);
	free(order);
	link_nodes(c, nodes, npages);
}

void chain_walkers(struct chain *c, int width)
{
	for (int w = 0; w < width && w < MAX_WIDTH; w++)
		c->start[w] = (void **)chain_nodes[(size_t)w * c->nodes / (size_t)width];
}

/* chase_K follows K walkers HOPS hops each per iteration, and leaves them
 * where they are, so the next call goes on from there. */
#define WALKER(k) void **p##k = c->start[k];
#define HOP(k) p##k = (void **)*p##k;
#define LEAVE(k) c->start[k] = p##k;
#define W1(m) m(0)
#define W2(m) W1(m) m(1)
#define W3(m) W2(m) m(2)
#define W4(m) W3(m) m(3)
#define W5(m) W4(m) m(4)
#define W6(m) W5(m) m(5)
#define W7(m) W6(m) m(6)
#define W8(m) W7(m) m(7)
#define W9(m) W8(m) m(8)
#define W10(m) W9(m) m(9)
#define W11(m) W10(m) m(10)
#define W12(m) W11(m) m(11)
#define W13(m) W12(m) m(12)
#define W14(m) W13(m) m(13)
#define W15(m) W14(m) m(14)
#define W16(m) W15(m) m(15)
#define TIMES10(s) s s s s s s s s s s
#define CHASE(K)                                                   \
	static void chase_##K(iter_t n, void *cookie)              \
	{                                                          \
		struct chain *c = cookie;                          \
		W##K(WALKER) while (n--)                           \
		{                                                  \
			TIMES10(TIMES10(W##K(HOP)))                \
		}                                                  \
		W##K(LEAVE)                                        \
	}
CHASE(1)
CHASE(2)
CHASE(3)
CHASE(4)
CHASE(5)
CHASE(6)
CHASE(7)
CHASE(8)
CHASE(9)
CHASE(10)
CHASE(11)
CHASE(12)
CHASE(13)
CHASE(14)
CHASE(15)
CHASE(16)

const benchmp_f chase_width[MAX_WIDTH] = { chase_1,  chase_2,  chase_3,	 chase_4,  chase_5,  chase_6,
					   chase_7,  chase_8,  chase_9,	 chase_10, chase_11, chase_12,
					   chase_13, chase_14, chase_15, chase_16 };

int chain_time(struct chain *c, int width, int warmup, int reps, const char *label, double *median_ns,
	       double *min_ns)
{
	double loads = (double)HOPS * width;

	chain_walkers(c, width);
	if (benchmp(NULL, chase_width[width - 1], NULL, 0, 1, warmup, reps, c))
		return -1;
	*median_ns = (double)gettime() / ((double)get_n() * loads);
	*min_ns = (double)gettime_min() / ((double)get_n_min() * loads);
	printf("# %s %.4f ns, min %.4f ns\n", label, *median_ns, *min_ns);
	harness_note();
	return 0;
}

int chain_parallelism(struct chain *c, int warmup, int reps, const char *label, int by_min, double *one,
		      double *one_min, double *best)
{
	char text[128];
	double t, t_min;

	*best = 1.0;
	for (int k = 1; k <= MAX_WIDTH; k++) {
		snprintf(text, sizeof(text), "%s %d walker%s:", label, k, k > 1 ? "s" : "");
		if (chain_time(c, k, warmup, reps, text, &t, &t_min))
			return -1;
		if (k == 1) {
			*one = t;
			*one_min = t_min;
		} else if ((by_min ? *one_min / t_min : *one / t) > *best)
			*best = by_min ? *one_min / t_min : *one / t;
		if (4.0 * *best < k - 1)
			break;
	}
	return 0;
}

int chain_options(int argc, char **argv, int *warmup, int *reps, long *line, long *max_kb)
{
	char opts[16] = "P:W:N:C:R";
	int opt;

	if (line)
		strcat(opts, "L:");
	if (max_kb)
		strcat(opts, "M:");
	while ((opt = getopt(argc, argv, opts)) != -1) {
		if (opt == 'P' && atoi(optarg) == 1) /* -P 1 only: these tools are not scalable */
			continue;
		else if (opt == 'W')
			*warmup = atoi(optarg);
		else if (opt == 'N')
			*reps = atoi(optarg);
		else if (opt == 'C')
			set_calibration_file(optarg);
		else if (opt == 'R')
			request_recalibration();
		else if (opt == 'L' && line)
			*line = atol(optarg);
		else if (opt == 'M' && max_kb)
			*max_kb = atol(optarg);
		else
			return -1;
	}
	return optind;
}
