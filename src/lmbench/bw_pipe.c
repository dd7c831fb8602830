/*
 * bw_pipe: pipe bandwidth (lmbench's bw_pipe): a child writes chunks of
 * MSG_BYTES (default 64 KB) as fast as it can, this process reads them.
 * bw_unix.c builds the same program over a Unix stream socket pair.
 *
 * usage: bw_pipe [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "bw_pipe <MB/s> MB/s" (all processes together when parallel).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BW_NAME
#define BW_NAME "bw_pipe"
#endif

struct state {
	size_t chunk;
	char *buf;
	int fd; /* our reading end */
	pid_t pid;
};

static int channel(int fds[2])
{
#ifdef BW_UNIX
	return socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
#else
	return pipe(fds);
#endif
}

/* Per process: its own channel and writer. */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;
	int fds[2];

	if (n != 0 || s->pid)
		return;
	s->buf = malloc(s->chunk);
	if (!s->buf || channel(fds))
		abort();
	memset(s->buf, 'b', s->chunk);
	s->pid = fork();
	if (s->pid < 0)
		abort();
	if (s->pid == 0) {
		place_end(1);
		close(fds[0]);
		signal(SIGPIPE, SIG_DFL); /* reader gone: die quietly */
		/* Stops when the reader closes (EPIPE / SIGPIPE) or dies. */
		while (write(fds[1], s->buf, s->chunk) > 0)
			;
		_exit(0);
	}
	close(fds[1]);
	s->fd = fds[0];
	place_end(0);
}

static void stop(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->pid)
		return;
	close(s->fd);
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	free(s->buf);
	s->pid = 0;
}

/* One iteration: one whole chunk read, however the kernel splits it. */
static void drain(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		for (size_t got = 0; got < s->chunk;) {
			ssize_t r = read(s->fd, s->buf, s->chunk - got);
			if (r <= 0)
				abort();
			got += (size_t)r;
		}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 65536, NULL, -1, 0 };

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 1)
		goto usage;
	if (first < argc)
		s.chunk = (size_t)atol(argv[first]);
	if (s.chunk < 1 || s.chunk > (64u << 20))
		goto usage;
	if (benchmp(start, drain, stop, 0, parallel, warmup, reps, &s))
		return 1;
	mb(BW_NAME, get_n() * s.chunk * (uint64_t)parallel);
	return 0;
usage:
	fprintf(stderr, "usage: " BW_NAME " [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES, 1..64M, default 65536]\n");
	return 2;
}
