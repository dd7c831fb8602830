/*
 * bw_udp: UDP bandwidth on loopback (lmbench's bw_udp): per iteration this
 * process asks a server it forks (127.0.0.1, ephemeral port; never another
 * address) for a batch of MSG_BYTES datagrams (default 65507, the largest),
 * and receives them all; the bytes counted are the datagrams' payload.
 *
 * lmbench's client asks for `move` bytes (10 MB) per request. A datagram
 * that finds the receiver's buffer full is dropped, and a lost datagram
 * would hang the client, so a batch here is what fits in half the receive
 * buffer the kernel grants (SO_RCVBUF, 4 MB asked; each datagram counted as
 * its payload + 1 KB of accounting), at most 1024 datagrams; the stderr
 * line says how many. A datagram still lost ends the run with an error
 * after 2 s rather than hanging it.
 *
 * usage: bw_udp [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [MSG_BYTES]
 * Prints "bw_udp <MB/s> MB/s" (all processes together when parallel).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdint.h>
#include <string.h>

#include "net.h"

#define MAX_DATAGRAM 65507
#define ASK_RCVBUF (4 << 20)
#define MAX_BATCH 1024

struct udp {
	struct peer peer;
	uint32_t batch; /* datagrams per request */
};

/* Requests are two 32-bit words in network order: datagrams, bytes each. */
static void source(int fd, size_t msg)
{
	char *buf = calloc(1, MAX_DATAGRAM);
	struct sockaddr_in from;
	uint32_t ask[2];

	(void)msg;
	if (!buf)
		_exit(1);
	for (;;) { /* killed by stop_server (or with its parent) */
		socklen_t len = sizeof(from);
		if (recvfrom(fd, ask, sizeof(ask), 0, (struct sockaddr *)&from, &len) != sizeof(ask))
			continue;
		uint32_t count = ntohl(ask[0]), size = ntohl(ask[1]);
		if (size > MAX_DATAGRAM)
			continue;
		while (count--)
			sendto(fd, buf, size, 0, (struct sockaddr *)&from, len);
	}
}

static void start(iter_t n, void *cookie)
{
	struct udp *u = cookie;
	struct peer *s = &u->peer;
	struct sockaddr_in addr;
	struct timeval limit = { 2, 0 };
	int server_fd, want = ASK_RCVBUF, got = 0;
	socklen_t len = sizeof(got);

	if (n != 0 || s->server)
		return;
	server_fd = loopback_socket(SOCK_DGRAM, &addr);
	if (server_fd < 0) {
		perror("bw_udp: 127.0.0.1");
		exit(1);
	}
	s->server = fork_server(server_fd, source, s->msg);
	s->buf = calloc(1, s->msg);
	s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	/* connect() fixes the peer; the timeout turns a lost datagram into an error. */
	if (!s->buf || s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want)) ||
	    getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &got, &len) ||
	    connect(s->fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit))) {
		perror("bw_udp: socket");
		stop_server(&s->server);
		exit(1);
	}
	u->batch = (uint32_t)((size_t)got / 2 / (s->msg + 1024));
	if (u->batch < 1)
		u->batch = 1;
	if (u->batch > MAX_BATCH)
		u->batch = MAX_BATCH;
}

static void transfer(iter_t n, void *cookie)
{
	struct udp *u = cookie;
	struct peer *s = &u->peer;
	uint32_t ask[2] = { htonl(u->batch), htonl((uint32_t)s->msg) };

	while (n--) {
		if (send(s->fd, ask, sizeof(ask), 0) != sizeof(ask)) {
			perror("bw_udp: request");
			abort();
		}
		for (uint32_t i = 0; i < u->batch; i++)
			if (recv(s->fd, s->buf, s->msg, 0) != (ssize_t)s->msg) {
				perror("bw_udp: lost datagram");
				abort();
			}
	}
}

int main(int argc, char **argv)
{
	struct udp u = { { MAX_DATAGRAM, NULL, -1, 0 }, 0 };
	int parallel = peer_bench(argc, argv, "bw_udp", &u.peer, MAX_DATAGRAM, "65507", start, transfer);

	if (parallel <= 0)
		return parallel ? 1 : 2;
	fprintf(stderr, "bw_udp: %u datagrams of %zu bytes per request\n", u.batch, u.peer.msg);
	mb("bw_udp", get_n() * u.batch * u.peer.msg * (uint64_t)parallel);
	return 0;
}
