/*
 * lat_syscall: system-call latency on the harness.
 *
 * usage: lat_syscall [-P parallel] [-W warmup_us] [-N repetitions] OP [FILE]
 * OP: null (getppid), read, write (1 byte from /dev/zero, to /dev/null),
 *     stat, fstat (of FILE, default /dev/null), open (open+close of FILE).
 * Prints "lat_syscall.<op> <latency> us".
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct state {
	const char *file;
	int fd;
};

static void do_null(iter_t n, void *cookie)
{
	(void)cookie;
	while (n--)
		getppid();
}

static void do_read(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char c;

	while (n--)
		if (read(s->fd, &c, 1) != 1)
			abort();
}

static void do_write(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char c = 0;

	while (n--)
		if (write(s->fd, &c, 1) != 1)
			abort();
}

static void do_stat(iter_t n, void *cookie)
{
	struct state *s = cookie;
	struct stat st;

	while (n--)
		if (stat(s->file, &st))
			abort();
}

static void do_fstat(iter_t n, void *cookie)
{
	struct state *s = cookie;
	struct stat st;

	while (n--)
		if (fstat(s->fd, &st))
			abort();
}

static void do_open(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		int fd = open(s->file, O_RDONLY);
		if (fd < 0)
			abort();
		close(fd);
	}
}

/* Per-child initialisation: each child opens its own descriptor. */
static void open_fd(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n == 0 && s->fd < 0) {
		s->fd = open(s->file, O_RDWR);
		if (s->fd < 0)
			abort();
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { "/dev/null", -1 };
	benchmp_f f = NULL, init = NULL;
	const char *op;
	char name[64];

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0)
		goto usage;
	op = argv[first];
	if (first + 1 < argc)
		s.file = argv[first + 1];
	if (!strcmp(op, "null"))
		f = do_null;
	else if (!strcmp(op, "read")) {
		f = do_read;
		s.file = first + 1 < argc ? s.file : "/dev/zero";
		init = open_fd;
	} else if (!strcmp(op, "write")) {
		f = do_write;
		init = open_fd;
	} else if (!strcmp(op, "stat"))
		f = do_stat;
	else if (!strcmp(op, "fstat")) {
		f = do_fstat;
		init = open_fd;
	} else if (!strcmp(op, "open"))
		f = do_open;
	else
		goto usage;
	if (f != do_null && access(s.file, F_OK)) { /* before measuring: a clear message, not an abort */
		perror(s.file);
		return 1;
	}
	if (benchmp(init, f, NULL, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "lat_syscall.%s", op);
	micro(name, get_n());
	return 0;
usage:
	fprintf(stderr, "usage: lat_syscall [-P parallel] [-W warmup_us] [-N repetitions] null|read|write|stat|fstat|open [file]\n");
	return 2;
}
