/*
 * lat_sem: System V semaphore latency (lmbench's lat_sem): a token passed
 * between this process and a child through a set of two semaphores (up
 * the other's, wait on one's own), per round trip.
 *
 * usage: lat_sem [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement]
 * Prints "lat_sem <latency> us" per round trip. The set is private
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
};

static int sem_op(int id, unsigned short num, short delta)
{
	struct sembuf op = { num, delta, 0 };

	return semop(id, &op, 1);
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
	s->pid = fork();
	if (s->pid < 0)
		abort();
	if (s->pid == 0) {
		place_end(1);
		/* Ends when the set is removed (semop fails with EIDRM). */
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

int main(int argc, char **argv)
{
	int parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { -1, 0 };

	if (harness_flags(argc, argv, &parallel, &warmup, &reps) != argc) {
		fprintf(stderr, "usage: lat_sem [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement]\n");
		return 2;
	}
	/* Not permitted without CAP_SYS_ADMIN: then a SIGKILL may leak the set. */
	if (unshare(CLONE_NEWIPC))
		fprintf(stderr, "# lat_sem: no IPC namespace of its own (%s): a killed run may leave its semaphore set\n",
			strerror(errno));
	if (benchmp(start, pass, stop, 0, parallel, warmup, reps, &s))
		return 1;
	micro("lat_sem", get_n());
	return 0;
}
