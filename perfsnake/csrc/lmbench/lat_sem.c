/*
 * lat_sem: System V semaphore latency (lmbench's lat_sem): a token passed
 * between this process and a child through a set of two semaphores.
 *   roundtrip          (the default) each side ups the other's semaphore,
 *                      then waits on its own: two semop() calls per pass
 *   roundtrip_lmbench  lmbench's definition: each pass is one semop() of two
 *                      operations (take from one's own, give to the other's,
 *                      atomically), and the figure is per pass, half a round
 *                      trip. The kernel performs a sleeping partner's pass
 *                      when it wakes it, so the waker's next pass goes through
 *                      at once: one wake-up per round trip instead of two.
 *                      So it prints well under half of roundtrip: on a 2-vCPU
 *                      VM about 1/2.7 with -A same and 1/6 with -A different,
 *                      where waking the partner's idle CPU dominates.
 *
 * usage: lat_sem [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [roundtrip|roundtrip_lmbench]
 * Prints "lat_sem <latency> us" per round trip, or
 * "lat_sem.roundtrip_lmbench <latency> us" per pass. The set is private
 * (IPC_PRIVATE) and removed at the end. Where it may (root), the program
 * first moves into an IPC namespace of its own, which the kernel destroys
 * with its last process: a killed lat_sem (kill -9, a run's time-out) leaves
 * no semaphore set behind either.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
	int id;
	pid_t pid;
	int lmbench;
};

static int sem_op(int id, unsigned short num, short delta)
{
	struct sembuf op = { num, delta, 0 };

	return semop(id, &op, 1);
}

/* lmbench's pass: take the token from `from` and give it to `to` in one call. */
static int sem_pass(int id, unsigned short from, unsigned short to)
{
	struct sembuf ops[2] = { { from, -1, 0 }, { to, 1, 0 } };

	return semop(id, ops, 2);
}

/* Per process: its own set and partner. */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || s->pid)
		return;
	s->id = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
	if (s->id < 0) {
		perror("lat_sem: semget");
		exit(1);
	}
	if (s->lmbench && sem_op(s->id, 1, 1)) /* the token starts on our side */
		abort();
	s->pid = fork();
	if (s->pid < 0)
		abort();
	if (s->pid == 0) {
		place_end(1);
		/* Ends when the set is removed (semop fails with EIDRM). */
		if (s->lmbench)
			while (!sem_pass(s->id, 0, 1))
				;
		else
			while (!sem_op(s->id, 0, -1) && !sem_op(s->id, 1, 1))
				;
		_exit(0);
	}
	place_end(0);
}

static void stop(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->pid)
		return;
	semctl(s->id, 0, IPC_RMID);
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

static void pass(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		if (sem_op(s->id, 0, 1) || sem_op(s->id, 1, -1))
			abort();
}

static void pass_lmbench(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		if (sem_pass(s->id, 1, 0))
			abort();
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { -1, 0, 0 };

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first >= 0 && argc - first == 1 && !strcmp(argv[first], "roundtrip_lmbench"))
		s.lmbench = 1;
	else if (first < 0 || argc - first > 1 || (first < argc && strcmp(argv[first], "roundtrip"))) {
		fprintf(stderr, "usage: lat_sem [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] "
			"[roundtrip|roundtrip_lmbench]\n");
		return 2;
	}
	/* Not permitted without CAP_SYS_ADMIN: then a SIGKILL may leak the set. */
	if (unshare(CLONE_NEWIPC))
		fprintf(stderr, "# lat_sem: no IPC namespace of its own (%s): a killed run may leave its semaphore set\n",
			strerror(errno));
	if (benchmp(start, s.lmbench ? pass_lmbench : pass, stop, 0, parallel, warmup, reps, &s))
		return 1;
	if (s.lmbench)
		micro("lat_sem.roundtrip_lmbench", get_n() * 2); /* per pass, as lmbench prints */
	else
		micro("lat_sem", get_n());
	return 0;
}
