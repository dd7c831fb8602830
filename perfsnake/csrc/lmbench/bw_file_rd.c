/*
 * bw_file_rd: file re-read bandwidth (lmbench's bw_file_rd): a private file
 * of SIZE_KB, written first so it sits in the page cache, read again and
 * again in 64 KB read() calls.
 *   io_only     the file stays open; each iteration reads it from offset 0
 *   open2close  each iteration opens, reads and closes it
 * As lmbench does, the data read is used: one 4-byte word in every 16
 * bytes is summed (bw_mem rd's definition), so the bytes reach the CPU.
 * bw_mmap_rd.c builds the same program over mmap() instead of read().
 *
 * usage: bw_file_rd [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB io_only|open2close [DIR]
 * DIR holds the file (default $TMPDIR or /tmp); it is removed at the end.
 * Prints "bw_file_rd.<op> <MB/s> MB/s" (bw_mmap_rd.<op>: mmap_only|open2close).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef BW_NAME
#define BW_NAME "bw_file_rd"
#define KEEP_OPEN "io_only"
#endif
#define CHUNK 65536

struct state {
	size_t size;
	int keep_open, fd;
	const char *dir;
	char path[4096];
	char *buf; /* read(): the 64 KB buffer; mmap(): the kept mapping */
	uint32_t sink;
};

/* One word in 16 bytes of [p, p + len), len a multiple of 16. */
static uint32_t use(const volatile uint32_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len / 4; i += 16)
		sum += p[i] + p[i + 4] + p[i + 8] + p[i + 12];
	return sum;
}

/* Per process: its own file, written so it is cached. */
static void make_file(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char buf[CHUNK];

	if (n != 0 || s->fd >= 0)
		return;
	snprintf(s->path, sizeof(s->path), "%s/" BW_NAME ".%d.XXXXXX", s->dir, (int)getpid());
	s->fd = mkstemp(s->path);
	if (s->fd < 0) {
		perror(s->path);
		exit(1);
	}
	memset(buf, 'r', sizeof(buf));
	for (size_t done = 0; done < s->size; done += sizeof(buf))
		if (write(s->fd, buf, s->size - done < sizeof(buf) ? s->size - done : sizeof(buf)) < 0)
			abort();
#ifdef BW_MMAP
	s->buf = mmap(NULL, s->size, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->buf == MAP_FAILED)
		abort();
#else
	s->buf = malloc(CHUNK);
	if (!s->buf)
		abort();
#endif
}

static void drop_file(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->fd < 0)
		return;
#ifdef BW_MMAP
	munmap(s->buf, s->size);
#else
	free(s->buf);
#endif
	close(s->fd);
	unlink(s->path);
	s->fd = -1;
}

static void read_file(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		int fd = s->keep_open ? s->fd : open(s->path, O_RDONLY);
		if (fd < 0)
			abort();
#ifdef BW_MMAP
		char *p = s->keep_open ? s->buf : mmap(NULL, s->size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			abort();
		s->sink += use((const uint32_t *)p, s->size);
		if (!s->keep_open)
			munmap(p, s->size);
#else
		for (off_t off = 0; off < (off_t)s->size;) {
			ssize_t got = pread(fd, s->buf, CHUNK, off);
			if (got <= 0)
				abort();
			s->sink += use((const uint32_t *)s->buf, (size_t)got & ~(size_t)15);
			off += got;
		}
#endif
		if (!s->keep_open)
			close(fd);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s;
	char name[64];

	memset(&s, 0, sizeof(s));
	s.fd = -1;
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || first + 1 >= argc || argc - first > 3 || atol(argv[first]) < 1)
		goto usage;
	s.size = (size_t)atol(argv[first]) * 1024;
	if (!strcmp(argv[first + 1], KEEP_OPEN))
		s.keep_open = 1;
	else if (strcmp(argv[first + 1], "open2close"))
		goto usage;
	if (first + 2 < argc)
		s.dir = argv[first + 2];
	if (benchmp(make_file, read_file, drop_file, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), BW_NAME ".%s", argv[first + 1]);
	mb(name, get_n() * s.size * (uint64_t)parallel);
	return 0;
usage:
	fprintf(stderr, "usage: " BW_NAME " [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB(>=1) " KEEP_OPEN "|open2close [DIR]\n");
	return 2;
}
