/*
 * Helpers of the programs that fork their own peer: an echo server, an
 * echoer or a writer over loopback TCP/UDP (bound to 127.0.0.1 on an
 * ephemeral port, never any other address), a Unix socket pair or a pipe.
 * The peer dies with its parent, and the parent kills and reaps it at the end.
 */
#ifndef PERFSNAKE_NET_H
#define PERFSNAKE_NET_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*serve_f)(int fd, size_t msg);

/* A socket of `type` bound to 127.0.0.1:0 (listening if a stream); *addr
 * gets the port the kernel chose. */
static inline int loopback_socket(int type, struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, type, 0), one = 1;

	if (fd < 0)
		return -1;
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr->sin_port = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) ||
	    getsockname(fd, (struct sockaddr *)addr, &len) ||
	    (type == SOCK_STREAM && listen(fd, 1024))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Forks the peer that serves `fd`; `other` (the caller's end of a pair, or
 * -1) is closed in the peer, `fd` in the caller. The peer dies with its
 * parent (PR_SET_PDEATHSIG), so even a killed benchmark leaves no server
 * behind. Returns the peer's pid. */
static inline pid_t fork_peer(int fd, int other, serve_f serve, size_t msg)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		abort();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* died before the prctl */
			_exit(0);
		if (other >= 0)
			close(other);
		place_end(1);
		serve(fd, msg);
		_exit(0);
	}
	close(fd);
	place_end(0);
	return pid;
}

static inline pid_t fork_server(int fd, serve_f serve, size_t msg)
{
	return fork_peer(fd, -1, serve, msg);
}

static inline void stop_server(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static inline int full_io(int fd, char *buf, size_t len, int writing)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Echoes `msg`-byte messages on a stream until end of file (the client
 * closed, or died). */
static inline void echo_stream(int fd, size_t msg)
{
	char *buf = malloc(msg);

	if (!buf)
		_exit(1);
	while (!full_io(fd, buf, msg, 0) && !full_io(fd, buf, msg, 1))
		;
}

/* A client's message buffer and connection to its own peer (lat_tcp,
 * lat_udp, lat_unix, bw_*); the benchmark's cookie. */
struct peer {
	size_t msg;
	char *buf;
	int fd;
	pid_t server;
};

/* benchmp cleanup, once per process: the connection, then the server. */
static inline void peer_stop(iter_t n, void *cookie)
{
	struct peer *s = cookie;

	if (n != 0 || !s->server)
		return;
	close(s->fd);
	stop_server(&s->server);
	free(s->buf);
}

/* One round trip of a `msg`-byte message per iteration (lat_tcp, lat_unix). */
static inline void peer_round_trip(iter_t n, void *cookie)
{
	struct peer *s = cookie;

	while (n--)
		if (full_io(s->fd, s->buf, s->msg, 1) || full_io(s->fd, s->buf, s->msg, 0))
			abort();
}

/* The command line these programs share (harness flags, then MSG_BYTES in
 * [1, max], default s->msg), and the run with peer_stop as cleanup. Returns
 * the parallelism; 0 after printing the usage; -1 when benchmp failed. */
static inline int peer_bench(int argc, char **argv, const char *name, struct peer *s, size_t max,
			     const char *max_text, benchmp_f start, benchmp_f body)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	size_t fallback = s->msg;

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first >= 0 && argc - first <= 1) {
		if (first < argc)
			s->msg = (size_t)atol(argv[first]);
		if (s->msg >= 1 && s->msg <= max)
			return benchmp(start, body, peer_stop, 0, parallel, warmup, reps, s) ? -1 : parallel;
	}
	fprintf(stderr, "usage: %s [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] "
		"[MSG_BYTES, 1..%s, default %zu]\n", name, max_text, fallback);
	return 0;
}

#endif
