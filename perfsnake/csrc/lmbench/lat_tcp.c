/*
 * lat_tcp: TCP latency on loopback (lmbench's lat_tcp): a MSG_BYTES message
 * (default 1) bounced off an echo server this program forks, bound to
 * 127.0.0.1 on an ephemeral port. TCP_NODELAY so Nagle does not delay the
 * small writes.
 *
 * usage: lat_tcp [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "lat_tcp <latency> us" per round trip.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

static void echo(int listener, size_t msg)
{
	int one = 1, fd = accept(listener, NULL, NULL);

	if (fd < 0)
		_exit(1);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	echo_stream(fd, msg);
}

/* Per process: its own server and connection. */
static void start(iter_t n, void *cookie)
{
	struct peer *s = cookie;
	struct sockaddr_in addr;
	int listener, one = 1;

	if (n != 0 || s->server)
		return;
	listener = loopback_socket(SOCK_STREAM, &addr);
	if (listener < 0) {
		perror("lat_tcp: 127.0.0.1");
		exit(1);
	}
	s->server = fork_server(listener, echo, s->msg);
	s->buf = calloc(1, s->msg);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!s->buf || s->fd < 0 || connect(s->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("lat_tcp: connect");
		stop_server(&s->server);
		exit(1);
	}
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int main(int argc, char **argv)
{
	struct peer s = { 1, NULL, -1, 0 };
	int parallel = peer_bench(argc, argv, "lat_tcp", &s, 16u << 20, "16M", start, peer_round_trip);

	if (parallel <= 0)
		return parallel ? 1 : 2;
	micro("lat_tcp", get_n());
	return 0;
}
