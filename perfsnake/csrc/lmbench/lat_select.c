/*
 * lat_select: select() on NFDS descriptors (lmbench's lat_select), none of
 * them the answer: the cost of the kernel's scan.
 *   file  NFDS descriptors of one regular file (always readable: select
 *         returns at once, all NFDS ready)
 *   tcp   NFDS TCP sockets connected to a listener on 127.0.0.1 (ephemeral
 *         port) that never writes: none readable, select times out at 0
 * Both with a zero timeout, as lmbench does.
 *
 * usage: lat_select [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] file|tcp [NFDS]
 * NFDS: 1..1000, default 200 (lmbench's -n default). Prints
 * "lat_select.<op>.<nfds> <latency> us" per select() call.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include "net.h"

#define MAX_FDS 1000

struct state {
	int tcp, nfds, fds[MAX_FDS], listener, top;
	fd_set set;
};

/* Per process: its own descriptors. */
static void open_fds(iter_t n, void *cookie)
{
	struct state *s = cookie;
	struct sockaddr_in addr;
	char self[4096];
	ssize_t len;

	if (n != 0 || s->top)
		return;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[len > 0 ? len : 0] = 0;
	if (s->tcp && (s->listener = loopback_socket(SOCK_STREAM, &addr)) < 0) {
		perror("lat_select: 127.0.0.1");
		exit(1);
	}
	FD_ZERO(&s->set);
	for (int i = 0; i < s->nfds; i++) {
		if (s->tcp) {
			/* The handshake completes in the listener's backlog: no accept needed. */
			s->fds[i] = socket(AF_INET, SOCK_STREAM, 0);
			if (s->fds[i] >= 0 && connect(s->fds[i], (struct sockaddr *)&addr, sizeof(addr)))
				s->fds[i] = -1;
		} else
			s->fds[i] = open(self, O_RDONLY);
		if (s->fds[i] < 0 || s->fds[i] >= FD_SETSIZE) {
			fprintf(stderr, "lat_select: cannot open descriptor %d of %d\n", i + 1, s->nfds);
			exit(1);
		}
		if (s->fds[i] >= s->top)
			s->top = s->fds[i] + 1;
		FD_SET(s->fds[i], &s->set);
	}
}

static void close_fds(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->top)
		return;
	for (int i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	if (s->tcp)
		close(s->listener);
	s->top = 0;
}

static void do_select(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		fd_set set = s->set; /* select overwrites it */
		struct timeval zero = { 0, 0 };
		if (select(s->top, &set, NULL, NULL, &zero) < 0)
			abort();
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	static struct state s;
	char name[64];

	s.nfds = 200;
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 2)
		goto usage;
	if (!strcmp(argv[first], "tcp"))
		s.tcp = 1;
	else if (strcmp(argv[first], "file"))
		goto usage;
	if (first + 1 < argc)
		s.nfds = atoi(argv[first + 1]);
	if (s.nfds < 1 || s.nfds > MAX_FDS)
		goto usage;
	if (benchmp(open_fds, do_select, close_fds, 0, parallel, warmup, reps, &s))
		return 1;
	snprintf(name, sizeof(name), "lat_select.%s.%d", argv[first], s.nfds);
	micro(name, get_n());
	return 0;
usage:
	fprintf(stderr, "usage: lat_select [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] file|tcp [NFDS, 1..1000, default 200]\n");
	return 2;
}
