/*
 * lat_fifo: named-pipe latency (lmbench's lat_fifo): lat_pipe's one-byte
 * round trip over two FIFOs made with mkfifo() in DIR (default $TMPDIR or
 * /tmp), removed as soon as both ends have opened them.
 *
 * usage: lat_fifo [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [DIR]
 * Prints "lat_fifo <latency> us" per round trip.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
	const char *dir;
	int to_child, from_child;
	pid_t pid;
};

/* Per process: two FIFOs and the echoing child. Opening a FIFO blocks
 * until the other end opens it, so both sides open in the same order. */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char there[4096], back[4096];

	if (n != 0 || s->pid)
		return;
	snprintf(there, sizeof(there), "%s/lat_fifo.%d.there", s->dir, (int)getpid());
	snprintf(back, sizeof(back), "%s/lat_fifo.%d.back", s->dir, (int)getpid());
	unlink(there);
	unlink(back);
	if (mkfifo(there, 0600) || mkfifo(back, 0600)) {
		perror("lat_fifo: mkfifo");
		exit(1);
	}
	s->pid = fork();
	if (s->pid < 0)
		abort();
	if (s->pid == 0) {
		int in = open(there, O_RDONLY), out = open(back, O_WRONLY);
		char c;

		place_end(1);
		/* Exits on EOF, i.e. as soon as its parent closes or dies. */
		while (in >= 0 && out >= 0 && read(in, &c, 1) == 1 && write(out, &c, 1) == 1)
			;
		_exit(0);
	}
	s->to_child = open(there, O_WRONLY);
	s->from_child = open(back, O_RDONLY);
	unlink(there);
	unlink(back);
	if (s->to_child < 0 || s->from_child < 0)
		abort();
	place_end(0);
}

static void stop(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->pid)
		return;
	close(s->to_child);
	close(s->from_child);
	stop_server(&s->pid);
}

static void bounce(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char c = 'f';

	while (n--)
		if (write(s->to_child, &c, 1) != 1 || read(s->from_child, &c, 1) != 1)
			abort();
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { NULL, -1, -1, 0 };

	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 1) {
		fprintf(stderr, "usage: lat_fifo [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [DIR]\n");
		return 2;
	}
	if (first < argc)
		s.dir = argv[first];
	if (benchmp(start, bounce, stop, 0, parallel, warmup, reps, &s))
		return 1;
	micro("lat_fifo", get_n());
	return 0;
}
