/*
 * The body of bw_file_rd and bw_mmap_rd (bw_file.h).
 * The data read is used with lmbench's definition (its bread()): every
 * 8-byte word is summed, 1 KB (128 words) at a time, so every byte
 * reaches the CPU; the sum is kept in the state so the compiler cannot drop
 * it, and the loop is a plain one it may schedule and vectorise as it likes
 * (a volatile load per word would time the loads one by one). An earlier
 * version summed one 4-byte word in 16 bytes (bw_mem rd's definition): 1.4
 * (read) and 1.9 (mmap) times lmbench3's figure.
 * The file is written one page per write(), so the page cache holds it in
 * single-page folios (as lat_pagefault's and lat_mmap's); in 64 KB folios
 * (64 KB writes, ext4 since Linux 6.16) bw_mmap_rd open2close, whose faults
 * map a folio's worth at a time, goes about twice as fast.
 */
#define _GNU_SOURCE
#include "bw_file.h"

#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK 65536

struct state {
	size_t size;
	int keep_open, fd;
	const char *dir;
	char path[4096];
	char *buf; /* read(): the 64 KB buffer; mmap(): the kept mapping */
	uint64_t sink; /* the data's sum, so it is computed */
	const char *name; /* the program's */
	int mapped; /* bw_mmap_rd */
};

/*
 * Every 8-byte word of [p, p + len) summed, in 1 KB blocks of 128 words
 * (16 words an iteration, so the loop's own branch is not what is timed);
 * a tail shorter than a block word by word, and a last partial word byte
 * by byte. p is 8-byte aligned (malloc, mmap).
 */
static inline uint64_t use(const char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)(const void *)p;
	size_t words = len / 8, i = 0;
	uint64_t sum = 0;

	for (; i + 128 <= words; i += 128) {
		uint64_t block = 0;
		for (const uint64_t *q = w + i; q < w + i + 128; q += 16)
			block += q[0] + q[1] + q[2] + q[3] + q[4] + q[5] + q[6] + q[7] +
				 q[8] + q[9] + q[10] + q[11] + q[12] + q[13] + q[14] + q[15];
		sum += block;
	}
	for (; i < words; i++)
		sum += w[i];
	for (size_t b = words * 8; b < len; b++)
		sum += (unsigned char)p[b];
	return sum;
}

/* Per process: its own file, written a page per write() so it is cached
 * in single-page folios. */
static void make_file(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char buf[CHUNK];
	size_t chunk, pagesize = (size_t)sysconf(_SC_PAGESIZE);

	if (n != 0 || s->fd >= 0)
		return;
	snprintf(s->path, sizeof(s->path), "%s/%s.%d.XXXXXX", s->dir, s->name, (int)getpid());
	s->fd = mkstemp(s->path);
	if (s->fd < 0) {
		perror(s->path);
		exit(1);
	}
	memset(buf, 'r', sizeof(buf));
	chunk = pagesize < sizeof(buf) ? pagesize : sizeof(buf); /* single-page folios */
	for (size_t done = 0; done < s->size; done += chunk)
		if (write(s->fd, buf, s->size - done < chunk ? s->size - done : chunk) < 0)
			abort();
	if (s->mapped) {
		s->buf = mmap(NULL, s->size, PROT_READ, MAP_SHARED, s->fd, 0);
		if (s->buf == MAP_FAILED)
			abort();
	} else {
		s->buf = malloc(CHUNK);
		if (!s->buf)
			abort();
	}
}

static void drop_file(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->fd < 0)
		return;
	if (s->mapped)
		munmap(s->buf, s->size);
	else
		free(s->buf);
	close(s->fd);
	unlink(s->path);
	s->fd = -1;
}

/* The timed iterations, one function per way of reading so neither
 * carries the other's branch. */
static void read_file(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		int fd = s->keep_open ? s->fd : open(s->path, O_RDONLY);
		if (fd < 0)
			abort();
		for (off_t off = 0; off < (off_t)s->size;) {
			ssize_t got = pread(fd, s->buf, CHUNK, off);
			if (got <= 0)
				abort();
			s->sink += use(s->buf, (size_t)got);
			off += got;
		}
		if (!s->keep_open)
			close(fd);
	}
}

static void map_file(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		int fd = s->keep_open ? s->fd : open(s->path, O_RDONLY);
		if (fd < 0)
			abort();
		char *p = s->keep_open ? s->buf : mmap(NULL, s->size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			abort();
		s->sink += use(p, s->size);
		/* Unmapped, then closed: two tests, so the timed code is the one
		 * bw_mmap_rd had when it was built from bw_file_rd.c with BW_MMAP. */
		if (!s->keep_open)
			munmap(p, s->size);
		if (!s->keep_open)
			close(fd);
	}
}

int bw_file_main(int argc, char **argv, const char *name, const char *keep_open, int mapped)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s;
	char result[64];

	memset(&s, 0, sizeof(s));
	s.name = name;
	s.mapped = mapped;
	s.fd = -1;
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || first + 1 >= argc || argc - first > 3 || atol(argv[first]) < 1)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	if (!strcmp(argv[first + 1], keep_open))
		s.keep_open = 1;
	else if (strcmp(argv[first + 1], "open2close"))
		goto usage;
	if (first + 2 < argc)
		s.dir = argv[first + 2];
	if (benchmp(make_file, mapped ? map_file : read_file, drop_file, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(result, sizeof(result), "%s.%s", name, argv[first + 1]);
	mb(result, get_n() * s.size * (uint64_t)parallel);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB(>=1) %s|open2close [DIR]\n",
		name, keep_open);
	return 2;
}
