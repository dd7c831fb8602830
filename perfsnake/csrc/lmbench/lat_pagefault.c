/*
 * lat_pagefault: the cost of a page fault on a file mapping (lmbench's
 * lat_pagefault). A private file of SIZE_KB stays in the page cache and
 * mapped; pages are read in a shuffled order (no sequential pattern for
 * read-ahead to exploit), and after every sweep madvise(MADV_DONTNEED)
 * drops the page-table entries so the next sweep faults again (the zapping
 * is amortised into the cost). Linux's fault-around still maps the cached
 * neighbours of a faulting page (16 pages on this kernel, MADV_RANDOM does
 * not stop it), so the faults actually taken are counted with getrusage.
 *
 * The file is written one page per write(), so the page cache holds it in
 * single-page folios, as a file read in by faults or small reads. A file
 * written in larger calls can sit in large folios (ext4 since Linux 6.16,
 * xfs, tmpfs): a fault then maps the whole folio around it and each page
 * costs much less, here about a third with 64 KB folios (64 KB writes) and
 * a thirtieth with 2 MB ones (one 4 MB write).
 *
 * fault_lmbench is lmbench's definition instead: every page touched in a
 * shuffled order, then the file unmapped and mapped afresh (MAP_SHARED,
 * msync MS_INVALIDATE), minus the cost of that unmap + map measured alone,
 * per page.
 *
 * usage: lat_pagefault [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB [fault|fault_lmbench] [DIR]
 * Prints "lat_pagefault <latency> us" per page touched,
 * "lat_pagefault.per_fault <latency> us" per fault taken, and
 * "lat_pagefault.faults_per_page <ratio> ratio" (1 = every touch faulted);
 * with fault_lmbench, "lat_pagefault.fault_lmbench <latency> us" per page.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

struct state {
	size_t size, pages, next;
	long pagesize;
	const char *dir;
	int fd;
	char *map;
	size_t *order;
	uint64_t touches, faults; /* over the measured run, for the ratio */
};

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Per process: its own file, mapping and shuffled page order. */
static void setup(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char path[4096], buf[65536];
	size_t chunk;

	if (n != 0 || s->fd >= 0)
		return;
	snprintf(path, sizeof(path), "%s/lat_pagefault.%d.XXXXXX", s->dir, (int)getpid());
	s->fd = mkstemp(path);
	if (s->fd < 0) {
		perror(path);
		exit(1);
	}
	unlink(path);
	memset(buf, 'p', sizeof(buf));
	chunk = (size_t)s->pagesize < sizeof(buf) ? (size_t)s->pagesize : sizeof(buf); /* single-page folios */
	for (size_t done = 0; done < s->size; done += chunk)
		if (write(s->fd, buf, s->size - done < chunk ? s->size - done : chunk) < 0)
			abort();
	s->map = mmap(NULL, s->size, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED)
		abort();
	madvise(s->map, s->size, MADV_RANDOM);
	s->order = malloc(s->pages * sizeof(*s->order));
	if (!s->order)
		abort();
	for (size_t i = 0; i < s->pages; i++)
		s->order[i] = i;
	srand((unsigned)getpid());
	for (size_t i = s->pages - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = s->order[i];
		s->order[i] = s->order[j];
		s->order[j] = t;
	}
	madvise(s->map, s->size, MADV_DONTNEED);
	s->next = 0;
}

static void teardown(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->fd < 0)
		return;
	munmap(s->map, s->size);
	close(s->fd);
	free(s->order);
	s->fd = -1;
}

static void fault(iter_t n, void *cookie)
{
	struct state *s = cookie;
	long before = minor_faults();
	unsigned sum = 0;

	s->touches += n;
	while (n--) {
		sum += (unsigned char)s->map[s->order[s->next] * (size_t)s->pagesize];
		if (++s->next == s->pages) {
			madvise(s->map, s->size, MADV_DONTNEED); /* unmap the pages: refault */
			s->next = 0;
		}
	}
	s->faults += (uint64_t)(minor_faults() - before);
	__asm__ __volatile__("" : : "r"(sum));
}

/* lmbench's unmap + fresh map of the whole file. */
static void remap(struct state *s)
{
	munmap(s->map, s->size);
	s->map = mmap(NULL, s->size, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED || msync(s->map, s->size, MS_INVALIDATE))
		abort();
}

static void fault_lmbench(iter_t n, void *cookie)
{
	struct state *s = cookie;
	unsigned sum = 0;

	while (n--) {
		for (size_t i = 0; i < s->pages; i++)
			sum += (unsigned char)s->map[s->order[i] * (size_t)s->pagesize];
		remap(s);
	}
	__asm__ __volatile__("" : : "r"(sum));
}

static void remap_only(iter_t n, void *cookie)
{
	while (n--)
		remap(cookie);
}

/* lmbench's figure: (touch all + remap) - remap, per page. */
static int run_lmbench(struct state *s, int parallel, int warmup, int reps)
{
	double remap_med, remap_min, med, min;

	if (benchmp(setup, remap_only, teardown, 0, parallel, warmup, reps, s))
		return 1;
	remap_med = (double)gettime() / (double)get_n();
	remap_min = (double)gettime_min() / (double)get_n_min();
	if (benchmp(setup, fault_lmbench, teardown, 0, parallel, warmup, reps, s))
		return 1;
	med = ((double)gettime() / (double)get_n() - remap_med) / (double)s->pages / 1000.0;
	min = ((double)gettime_min() / (double)get_n_min() - remap_min) / (double)s->pages / 1000.0;
	result_line("lat_pagefault.fault_lmbench", med > 0 ? med : 0, "us");
	result_line("lat_pagefault.fault_lmbench.min", min > 0 ? min : 0, "us");
	harness_note();
	return 0;
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES, lmbench = 0;
	struct state s;
	double ratio;

	memset(&s, 0, sizeof(s));
	s.fd = -1;
	s.pagesize = sysconf(_SC_PAGESIZE);
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || atol(argv[first]) < 64)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	s.pages = s.size / (size_t)s.pagesize;
	if (first + 1 < argc && !strcmp(argv[first + 1], "fault_lmbench"))
		lmbench = 1;
	if (first + 1 < argc && (lmbench || !strcmp(argv[first + 1], "fault")))
		first++; /* the operation, then the optional DIR */
	if (argc - first > 2)
		goto usage;
	if (first + 1 < argc)
		s.dir = argv[first + 1];
	if (lmbench)
		return run_lmbench(&s, parallel, warmup, reps);
	if (benchmp(setup, fault, teardown, 0, parallel, warmup, reps, &s))
		return 1;
	/* This process's own count (the parent's sizing run when parallel):
	 * below 1 when the kernel mapped more than the touched page per fault. */
	ratio = s.touches ? (double)s.faults / (double)s.touches : 0;
	micro("lat_pagefault", get_n());
	if (ratio > 0)
		result_line("lat_pagefault.per_fault", (double)gettime() / 1000.0 / (double)get_n() / ratio, "us");
	result_line("lat_pagefault.faults_per_page", ratio, "ratio");
	return 0;
usage:
	fprintf(stderr, "usage: lat_pagefault [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB(>=64) [fault|fault_lmbench] [dir]\n");
	return 2;
}
