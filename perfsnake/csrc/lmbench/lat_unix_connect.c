/*
 * lat_unix_connect: Unix-domain stream connection cost (lmbench's
 * lat_unix_connect): socket() + connect() + close() per iteration against
 * a server this program forks, listening (backlog 100, as lmbench) on a
 * socket in DIR (default $TMPDIR or /tmp); the server accepts, reads until
 * the client's close and closes. A Unix socket leaves no TIME_WAIT, so
 * unlike lat_connect it is scalable: each process has its own server.
 *
 * usage: lat_unix_connect [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [DIR]
 * Prints "lat_unix_connect <latency> us" per connection.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
	const char *dir;
	struct sockaddr_un addr;
	pid_t server;
};

static void serve(int listener)
{
	for (;;) {
		int fd = accept(listener, NULL, NULL);
		char c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			_exit(1);
		}
		while (read(fd, &c, 1) > 0) /* the client writes nothing: until its close */
			;
		close(fd);
	}
}

/* Per process: a listening socket in DIR and its server (the socket's name
 * stays until stop(): connect() needs it). */
static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;
	pid_t parent = getpid();
	int listener;

	if (n != 0 || s->server)
		return;
	memset(&s->addr, 0, sizeof(s->addr));
	s->addr.sun_family = AF_UNIX;
	if ((size_t)snprintf(s->addr.sun_path, sizeof(s->addr.sun_path), "%s/lat_unix_connect.%d", s->dir,
			     (int)getpid()) >= sizeof(s->addr.sun_path)) {
		fprintf(stderr, "lat_unix_connect: %s: too long for a socket's name\n", s->dir);
		exit(1);
	}
	unlink(s->addr.sun_path);
	listener = socket(AF_UNIX, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&s->addr, sizeof(s->addr)) || listen(listener, 100)) {
		perror(s->addr.sun_path);
		exit(1);
	}
	s->server = fork();
	if (s->server < 0) {
		perror("lat_unix_connect: fork");
		exit(1);
	}
	if (s->server == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		place_end(1);
		serve(listener);
	}
	close(listener);
	place_end(0);
}

static void stop(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0 || !s->server)
		return;
	kill(s->server, SIGKILL);
	waitpid(s->server, NULL, 0);
	unlink(s->addr.sun_path);
	s->server = 0;
}

static void connect_close(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&s->addr, sizeof(s->addr))) {
			perror("lat_unix_connect: connect");
			abort();
		}
		close(fd);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s;

	memset(&s, 0, sizeof(s));
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 1) {
		fprintf(stderr, "usage: lat_unix_connect [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] "
			"[-A placement] [DIR]\n");
		return 2;
	}
	if (first < argc)
		s.dir = argv[first];
	if (benchmp(start, connect_close, stop, 0, parallel, warmup, reps, &s))
		return 1;
	micro("lat_unix_connect", get_n());
	return 0;
}
