/*
 * lat_udp: UDP latency on loopback (lmbench's lat_udp): a MSG_BYTES datagram
 * (default 1) bounced off an echo server this program forks, bound to
 * 127.0.0.1 on an ephemeral port. Loopback does not drop datagrams, so a
 * lost one is an error rather than a retry.
 *
 * usage: lat_udp [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "lat_udp <latency> us" per round trip.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

#define MAX_DATAGRAM 65507

static void echo(int fd, size_t msg)
{
	char *buf = malloc(msg);
	struct sockaddr_in from;
	socklen_t len;

	if (!buf)
		_exit(1);
	for (;;) { /* killed by stop_server (or with its parent) */
		len = sizeof(from);
		ssize_t r = recvfrom(fd, buf, msg, 0, (struct sockaddr *)&from, &len);
		if (r > 0)
			sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&from, len);
	}
}

static void start(iter_t n, void *cookie)
{
	struct peer *s = cookie;
	struct sockaddr_in addr;
	struct timeval limit = { 2, 0 };
	int server_fd;

	if (n != 0 || s->server)
		return;
	server_fd = loopback_socket(SOCK_DGRAM, &addr);
	if (server_fd < 0) {
		perror("lat_udp: 127.0.0.1");
		exit(1);
	}
	s->server = fork_server(server_fd, echo, s->msg);
	s->buf = calloc(1, s->msg);
	s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	/* connect() fixes the peer, so send/recv need no address; the
	 * timeout turns a lost datagram into an error instead of a hang. */
	if (!s->buf || s->fd < 0 || connect(s->fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit))) {
		perror("lat_udp: connect");
		stop_server(&s->server);
		exit(1);
	}
}

static void round_trip(iter_t n, void *cookie)
{
	struct peer *s = cookie;

	while (n--)
		if (send(s->fd, s->buf, s->msg, 0) != (ssize_t)s->msg || recv(s->fd, s->buf, s->msg, 0) != (ssize_t)s->msg) {
			perror("lat_udp: lost datagram");
			abort();
		}
}

int main(int argc, char **argv)
{
	struct peer s = { 1, NULL, -1, 0 };
	int parallel = peer_bench(argc, argv, "lat_udp", &s, MAX_DATAGRAM, "65507", start, round_trip);

	if (parallel <= 0)
		return parallel ? 1 : 2;
	micro("lat_udp", get_n());
	return 0;
}
