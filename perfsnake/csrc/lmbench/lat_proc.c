/*
 * lat_proc: process creation latency (lmbench's lat_proc).
 *   fork  fork, the child exits at once (_exit(0)), the parent waits
 *   fork_lmbench  the same with lmbench's exit(1): stdio and atexit
 *         handlers run in the child
 *   exec  fork + execve of a tiny program (this binary with "child")
 *   shell fork + /bin/sh -c of that program
 *
 * usage: lat_proc [-P parallel] [-W warmup_us] [-N repetitions] fork|exec|shell
 * Prints "lat_proc.<op> <latency> us".
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char self[4096];

static void spawn(iter_t n, void *cookie)
{
	const char *op = cookie;

	while (n--) {
		pid_t pid = fork();
		if (pid < 0)
			abort();
		if (pid == 0) {
			if (!strcmp(op, "exec"))
				execl(self, self, "child", (char *)NULL);
			else if (!strcmp(op, "shell"))
				execl("/bin/sh", "sh", "-c", self, (char *)NULL);
			else if (!strcmp(op, "fork_lmbench"))
				exit(1);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	char name[64];
	ssize_t len;

	if (argc == 2 && !strcmp(argv[1], "child"))
		return 0;
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || (strcmp(argv[first], "fork") && strcmp(argv[first], "fork_lmbench") && strcmp(argv[first], "exec") &&
			   strcmp(argv[first], "shell"))) {
		fprintf(stderr, "usage: lat_proc [-P parallel] [-W warmup_us] [-N repetitions] fork|fork_lmbench|exec|shell\n");
		return 2;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return 2;
	self[len] = 0;
	if (!strcmp(argv[first], "shell"))
		snprintf(self + len, sizeof(self) - (size_t)len, " child");
	if (benchmp(NULL, spawn, NULL, 0, parallel, warmup, reps, argv[first]))
		return 1;
	snprintf(name, sizeof(name), "lat_proc.%s", argv[first]);
	micro(name, get_n());
	return 0;
}
