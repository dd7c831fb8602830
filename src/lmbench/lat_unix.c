/*
 * lat_unix: Unix stream-socket latency (lmbench's lat_unix): a MSG_BYTES
 * message (default 1) bounced between this process and a child over
 * socketpair(AF_UNIX, SOCK_STREAM).
 *
 * usage: lat_unix [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [MSG_BYTES]
 * Prints "lat_unix <latency> us" per round trip.
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

struct state {
	size_t msg;
	char *buf;
	int fd;
	pid_t pid;
};

static int full(int fd, char *buf, size_t len, int writing)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Per process (each parallel child has its own pair): start the echoer. */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;
	int fds[2];

	if (n != 0 || s->pid)
		return;
	s->buf = calloc(1, s->msg);
	if (!s->buf || socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		abort();
	s->pid = fork();
	if (s->pid < 0)
		abort();
	if (s->pid == 0) {
		place_end(1);
		close(fds[0]);
		/* Ends at EOF: the parent closed its end, or died. */
		while (!full(fds[1], s->buf, s->msg, 0) && !full(fds[1], s->buf, s->msg, 1))
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

static void bounce(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		if (full(s->fd, s->buf, s->msg, 1) || full(s->fd, s->buf, s->msg, 0))
			abort();
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 1, NULL, -1, 0 };

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 1)
		goto usage;
	if (first < argc)
		s.msg = (size_t)atol(argv[first]);
	if (s.msg < 1 || s.msg > (16u << 20))
		goto usage;
	if (benchmp(start, bounce, stop, 0, parallel, warmup, reps, &s))
		return 1;
	micro("lat_unix", get_n());
	return 0;
usage:
	fprintf(stderr, "usage: lat_unix [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [MSG_BYTES, 1..16M, default 1]\n");
	return 2;
}
