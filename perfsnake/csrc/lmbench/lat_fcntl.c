/*
 * lat_fcntl: fcntl() record-lock ping-pong between two processes
 * (lmbench's lat_fcntl). Two files, made in DIR (default $TMPDIR or /tmp)
 * and unlinked at once, each with a write lock on its first byte; this
 * process holds both before it forks its partner. Per iteration this side
 * takes lock 1 (waiting, F_SETLKW), releases 2, takes 2 (waiting), releases
 * 1; the partner releases 1, takes 2, releases 2, takes 1, forever. The
 * lock passes between the two four times an iteration; as lmbench, the time
 * is reported per half iteration, a lock's round trip. (A release only
 * wakes the waiter: when it has not run yet, the releasing side may take
 * the lock again at once, as it may in lmbench.)
 *
 * usage: lat_fcntl [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [DIR]
 * Prints "lat_fcntl <latency> us" per round trip.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
	const char *dir;
	int fd[2];
	pid_t pid;
};

/* F_SETLKW: wait for the write lock on byte 0; F_SETLK to release it. */
static int lock_file(int fd, short type, int cmd)
{
	struct flock l;

	memset(&l, 0, sizeof(l));
	l.l_type = type;
	l.l_whence = SEEK_SET;
	l.l_start = 0;
	l.l_len = 1;
	return fcntl(fd, cmd, &l);
}

#define TAKE(fd) lock_file(fd, F_WRLCK, F_SETLKW)
#define GIVE(fd) lock_file(fd, F_UNLCK, F_SETLK)

static int private_file(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/lat_fcntl.%d.XXXXXX", dir, (int)getpid());
	fd = mkstemp(path);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	unlink(path);
	return fd;
}

/* The partner: dies with its parent. */
static void partner(struct state *s, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	place_end(1);
	for (;;)
		if (GIVE(s->fd[0]) || TAKE(s->fd[1]) || GIVE(s->fd[1]) || TAKE(s->fd[0]))
			_exit(1);
}

/* Per process: the two files, both locked, and the partner. */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;
	pid_t parent = getpid();

	if (n != 0 || s->pid)
		return;
	s->fd[0] = private_file(s->dir);
	s->fd[1] = private_file(s->dir);
	if (TAKE(s->fd[0]) || TAKE(s->fd[1])) {
		perror("lat_fcntl: F_SETLKW");
		exit(1);
	}
	s->pid = fork();
	if (s->pid < 0) {
		perror("lat_fcntl: fork");
		exit(1);
	}
	if (s->pid == 0)
		partner(s, parent);
	place_end(0);
}

static void stop(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->pid)
		return;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	close(s->fd[0]);
	close(s->fd[1]);
	s->pid = 0;
}

static void ping_pong(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		if (TAKE(s->fd[0]) || GIVE(s->fd[1]) || TAKE(s->fd[1]) || GIVE(s->fd[0]))
			abort();
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s;

	memset(&s, 0, sizeof(s));
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 1) {
		fprintf(stderr, "usage: lat_fcntl [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [DIR]\n");
		return 2;
	}
	if (first < argc)
		s.dir = argv[first];
	if (benchmp(start, ping_pong, stop, 0, parallel, warmup, reps, &s))
		return 1;
	micro("lat_fcntl", 2 * get_n());
	return 0;
}
