/*
 * lat_connect: TCP connection latency on loopback (lmbench's lat_connect):
 * socket + connect + close against a server this program forks, bound to
 * 127.0.0.1 on an ephemeral port, that accepts and closes.
 *
 * The client closes with SO_LINGER 0 (a reset): an orderly close would leave
 * every connection in TIME_WAIT and a run of a few 100k connections would
 * exhaust the ephemeral ports, the TIMEOUT problem the paper describes. For
 * the same reason, as in lmbench3, it is not a scalable benchmark: no -P.
 *
 * usage: lat_connect [-W warmup_us] [-N repetitions] [-C calfile]
 * Prints "lat_connect <latency> us" per connection.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

struct state {
	struct sockaddr_in addr;
	pid_t server;
};

static void acceptor(int listener, size_t msg)
{
	(void)msg;
	for (;;) { /* killed by stop_server (or with its parent) */
		int fd = accept(listener, NULL, NULL);
		if (fd >= 0)
			close(fd);
	}
}

static void start(iter_t n, void *cookie)
{
	struct state *s = cookie;
	int listener;

	if (n != 0 || s->server)
		return;
	listener = loopback_socket(SOCK_STREAM, &s->addr);
	if (listener < 0) {
		perror("lat_connect: 127.0.0.1");
		exit(1);
	}
	s->server = fork_server(listener, acceptor, 0);
}

static void stop(iter_t n, void *cookie)
{
	if (n == 0)
		stop_server(&((struct state *)cookie)->server);
}

static void connect_close(iter_t n, void *cookie)
{
	struct state *s = cookie;
	struct linger reset = { 1, 0 };

	while (n--) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&s->addr, sizeof(s->addr))) {
			perror("lat_connect: connect");
			abort();
		}
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
		close(fd);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s;

	memset(&s, 0, sizeof(s));
	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first != argc || parallel != 1) {
		fprintf(stderr, "usage: lat_connect [-W warmup_us] [-N repetitions] [-C calfile] (not scalable: no -P)\n");
		return 2;
	}
	if (benchmp(start, connect_close, stop, 0, 1, warmup, reps, &s))
		return 1;
	micro("lat_connect", get_n());
	return 0;
}
