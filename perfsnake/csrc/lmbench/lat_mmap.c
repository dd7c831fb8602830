/*
 * lat_mmap: mmap latency (lmbench's lat_mmap): map SIZE_KB of a file,
 * touch one byte of every page, unmap. The file is private to each process
 * (the paper's independent-files mode) and stays in the page cache, so this
 * is mapping, minor faults and teardown, not I/O.
 *
 * map_lmbench is lmbench's definition instead: a read-write shared mapping
 * with one byte written every 16 KB over the first tenth of the file.
 *
 * The file is written one page per write(), so the page cache holds it in
 * single-page folios (as lat_pagefault's). Written in 64 KB calls it sits in
 * 64 KB folios (ext4 since Linux 6.16): a write fault then maps the whole
 * folio, so map_lmbench takes 7 faults instead of 26, fault-around and
 * munmap handle one folio per 16 pages: map_lmbench costs about half
 * (lmbench3's lat_mmap on such a file too) and map about a third.
 *
 * usage: lat_mmap [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB [map|map_lmbench] [DIR]
 * DIR holds the temporary file (default $TMPDIR or /tmp).
 * Prints "lat_mmap.<size>k <latency> us" per mmap+touch+munmap
 * ("lat_mmap.lmbench.<size>k" with map_lmbench).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct state {
	size_t size;
	long pagesize;
	const char *dir;
	char path[4096];
	int fd;
};

/* Per process: a private file of SIZE bytes, written a page per write() so
 * it is cached in single-page folios. */
static void make_file(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char buf[65536];
	size_t chunk;

	if (n != 0 || s->fd >= 0)
		return;
	snprintf(s->path, sizeof(s->path), "%s/lat_mmap.%d.XXXXXX", s->dir, (int)getpid());
	s->fd = mkstemp(s->path);
	if (s->fd < 0) {
		perror(s->path);
		exit(1);
	}
	unlink(s->path); /* gone from the directory; nothing to clean up on a crash */
	memset(buf, 'm', sizeof(buf));
	chunk = (size_t)s->pagesize < sizeof(buf) ? (size_t)s->pagesize : sizeof(buf); /* single-page folios */
	for (size_t done = 0; done < s->size; done += chunk)
		if (write(s->fd, buf, s->size - done < chunk ? s->size - done : chunk) < 0)
			abort();
}

static void drop_file(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->fd < 0)
		return;
	close(s->fd);
	s->fd = -1;
}

static void map_touch_unmap(iter_t n, void *cookie)
{
	struct state *s = cookie;
	unsigned sum = 0;

	while (n--) {
		char *p = mmap(NULL, s->size, PROT_READ, MAP_SHARED, s->fd, 0);
		if (p == MAP_FAILED)
			abort();
		for (size_t i = 0; i < s->size; i += (size_t)s->pagesize)
			sum += (unsigned char)p[i];
		munmap(p, s->size);
	}
	__asm__ __volatile__("" : : "r"(sum));
}

/* lmbench's: write a byte every 16 KB in the first tenth, then unmap. */
static void map_lmbench(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		char *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
		if (p == MAP_FAILED)
			abort();
		for (size_t i = 0; i < s->size / 10 || i == 0; i += 16 << 10)
			p[i] = (char)s->size;
		munmap(p, s->size);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 0 };
	char name[64];
	benchmp_f f = map_touch_unmap;

	s.fd = -1;
	s.pagesize = sysconf(_SC_PAGESIZE);
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || atol(argv[first]) < 1)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	if (first + 1 < argc && !strcmp(argv[first + 1], "map_lmbench"))
		f = map_lmbench;
	if (first + 1 < argc && (f == map_lmbench || !strcmp(argv[first + 1], "map")))
		first++; /* the operation, then the optional DIR */
	if (argc - first > 2)
		goto usage;
	if (first + 1 < argc)
		s.dir = argv[first + 1];
	if (benchmp(make_file, f, drop_file, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "lat_mmap.%s%zuk", f == map_lmbench ? "lmbench." : "", s.size / 1024);
	micro(name, get_n());
	return 0;
usage:
	fprintf(stderr, "usage: lat_mmap [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB(>=1) [map|map_lmbench] [dir]\n");
	return 2;
}
