/*
 * bw_tcp: TCP bandwidth on loopback (lmbench's bw_tcp): a server this
 * program forks (127.0.0.1, ephemeral port) writes MSG_BYTES chunks
 * (default 65536) as fast as it can; this process reads them.
 *
 * usage: bw_tcp [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [MSG_BYTES]
 * Prints "bw_tcp <MB/s> MB/s" (all processes together when parallel).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

static void source(int listener, size_t msg)
{
	char *buf = malloc(msg);
	int fd = accept(listener, NULL, NULL);

	if (fd < 0 || !buf)
		_exit(1);
	memset(buf, 't', msg);
	/* Ends when the client closes (EPIPE) or dies. */
	signal(SIGPIPE, SIG_DFL);
	while (!full_io(fd, buf, msg, 1))
		;
}

/* Per process: its own server and connection. */
static void start(iter_t n, void *cookie)
{
	struct peer *s = cookie;
	struct sockaddr_in addr;
	int listener;

	if (n != 0 || s->server)
		return;
	listener = loopback_socket(SOCK_STREAM, &addr);
	if (listener < 0) {
		perror("bw_tcp: 127.0.0.1");
		exit(1);
	}
	s->server = fork_server(listener, source, s->msg);
	s->buf = malloc(s->msg);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!s->buf || s->fd < 0 || connect(s->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("bw_tcp: connect");
		stop_server(&s->server);
		exit(1);
	}
}

/* One iteration: one whole chunk read, however the kernel splits it. */
static void drain(iter_t n, void *cookie)
{
	struct peer *s = cookie;

	while (n--)
		if (full_io(s->fd, s->buf, s->msg, 0))
			abort();
}

int main(int argc, char **argv)
{
	struct peer s = { 65536, NULL, -1, 0 };
	int parallel = peer_bench(argc, argv, "bw_tcp", &s, 64u << 20, "64M", start, drain);

	if (parallel <= 0)
		return parallel ? 1 : 2;
	mb("bw_tcp", get_n() * s.msg * (uint64_t)parallel);
	return 0;
}
