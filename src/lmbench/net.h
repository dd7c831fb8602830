/*
 * Loopback helpers for lat_tcp, lat_udp and lat_connect: each program forks
 * its own server bound to 127.0.0.1 on an ephemeral port (port 0, then
 * getsockname), never any other address, and kills and reaps it at the end.
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

/* Forks the server on `fd`; it dies with its parent (PR_SET_PDEATHSIG), so
 * even a killed benchmark leaves no server behind. The parent keeps no
 * copy of `fd`. Returns the server's pid. */
static inline pid_t fork_server(int fd, serve_f serve, size_t msg)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		abort();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* died before the prctl */
			_exit(0);
		place_end(1);
		serve(fd, msg);
		_exit(0);
	}
	close(fd);
	place_end(0);
	return pid;
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

/* A client's message buffer and connection to its own server (lat_tcp,
 * lat_udp); the benchmark's cookie. */
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

#endif
