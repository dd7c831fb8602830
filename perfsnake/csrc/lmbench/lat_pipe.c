/*
 * lat_pipe: pipe latency (lmbench's lat_pipe), a one-byte token bounced
 * between this process and a child over two pipes ('hot potato').
 *
 * usage: lat_pipe [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile]
 * Prints "lat_pipe <latency> us" per round trip (two writes, two reads,
 * two context switches when both sides share a CPU).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
	int to_child[2], to_parent[2];
	pid_t pid;
};

/* Per process (each parallel child has its own pair): start the echoer. */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->pid)
		return;
	if (pipe(s->to_child) || pipe(s->to_parent))
		abort();
	s->pid = fork();
	if (s->pid < 0)
		abort();
	if (s->pid == 0) {
		char c;

		place_end(1);
		close(s->to_child[1]);
		close(s->to_parent[0]);
		/* Exits on EOF, i.e. as soon as its parent closes or dies. */
		while (read(s->to_child[0], &c, 1) == 1 && write(s->to_parent[1], &c, 1) == 1)
			;
		_exit(0);
	}
	close(s->to_child[0]);
	close(s->to_parent[1]);
	place_end(0);
}

static void stop(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->pid)
		return;
	close(s->to_child[1]);
	close(s->to_parent[0]);
	stop_server(&s->pid);
}

static void bounce(iter_t n, void *cookie)
{
	struct state *s = cookie;
	char c = 't';

	while (n--)
		if (write(s->to_child[1], &c, 1) != 1 || read(s->to_parent[0], &c, 1) != 1)
			abort();
}

int main(int argc, char **argv)
{
	int parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { { -1, -1 }, { -1, -1 }, 0 };

	if (harness_flags(argc, argv, &parallel, &warmup, &reps) != argc) {
		fprintf(stderr, "usage: lat_pipe [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile]\n");
		return 2;
	}
	if (benchmp(start, bounce, stop, 0, parallel, warmup, reps, &s))
		return 1;
	micro("lat_pipe", get_n());
	return 0;
}
