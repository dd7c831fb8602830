/*
 * lat_ctx: context-switch latency with a token ring (lmbench's lat_ctx).
 * NPROCS processes pass a one-byte token around a ring of pipes; each
 * touches a private working set of SIZE_KB before passing it on, so larger
 * sizes add the cost of refilling caches after each switch.
 *
 * usage: lat_ctx [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB NPROCS
 * Prints "lat_ctx.<nprocs>p_<size>k <latency> us" per hop (pipe + switch).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PROCS 64

struct ring {
	int nprocs;
	size_t size;
	int pipes[MAX_PROCS][2];
	pid_t pids[MAX_PROCS];
	char *buf;
	int up;
};

static void touch(char *buf, size_t size)
{
	for (size_t i = 0; i < size; i += 64)
		buf[i]++;
}

static void ring_up(iter_t n, void *cookie)
{
	struct ring *r = cookie;

	if (n != 0 || r->up)
		return;
	r->buf = calloc(1, r->size + 64);
	for (int i = 0; i < r->nprocs; i++)
		if (pipe(r->pipes[i]))
			abort();
	for (int i = 1; i < r->nprocs; i++) {
		r->pids[i] = fork();
		if (r->pids[i] < 0)
			abort();
		if (r->pids[i] == 0) {
			char c;
			int in = r->pipes[i][0], out = r->pipes[(i + 1) % r->nprocs][1];

			place_end(i % 2); /* "different": neighbours alternate CPUs */
			for (;;) {
				if (read(in, &c, 1) != 1)
					_exit(0);
				touch(r->buf, r->size);
				if (write(out, &c, 1) != 1)
					_exit(0);
			}
		}
	}
	place_end(0);
	r->up = 1;
}

static void ring_down(iter_t n, void *cookie)
{
	struct ring *r = cookie;

	if (n != 0 || !r->up)
		return;
	for (int i = 0; i < r->nprocs; i++) {
		close(r->pipes[i][0]);
		close(r->pipes[i][1]);
	}
	for (int i = 1; i < r->nprocs; i++) {
		kill(r->pids[i], SIGTERM);
		waitpid(r->pids[i], NULL, 0);
	}
	free(r->buf);
	r->up = 0;
}

static void pass(iter_t n, void *cookie)
{
	struct ring *r = cookie;
	char c = 't';

	while (n--) {
		if (write(r->pipes[1 % r->nprocs][1], &c, 1) != 1 || read(r->pipes[0][0], &c, 1) != 1)
			abort();
		touch(r->buf, r->size);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct ring r;
	char name[64];

	memset(&r, 0, sizeof(r));
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || first + 1 >= argc)
		goto usage;
	r.size = (size_t)atol(argv[first]) * 1024;
	r.nprocs = atoi(argv[first + 1]);
	if (r.nprocs < 2 || r.nprocs > MAX_PROCS)
		goto usage;
	if (benchmp(ring_up, pass, ring_down, 0, parallel, warmup, reps, &r))
		return 1;
	snprintf(name, sizeof(name), "lat_ctx.%dp_%zuk", r.nprocs, r.size / 1024);
	micro(name, get_n() * (uint64_t)r.nprocs);
	return 0;
usage:
	fprintf(stderr, "usage: lat_ctx [-P parallel] [-W warmup_us] [-N repetitions] SIZE_KB NPROCS(2-64)\n");
	return 2;
}
