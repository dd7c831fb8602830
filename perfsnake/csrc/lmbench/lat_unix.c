/*
 * lat_unix: Unix stream-socket latency (lmbench's lat_unix): a MSG_BYTES
 * message (default 1) bounced between this process and a child over
 * socketpair(AF_UNIX, SOCK_STREAM).
 *
 * usage: lat_unix [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [MSG_BYTES]
 * Prints "lat_unix <latency> us" per round trip.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

/* Per process (each parallel child has its own pair): start the echoer. */
static void start(iter_t n, void *cookie)
{
	struct peer *s = cookie;
	int fds[2];

	if (n != 0 || s->server)
		return;
	s->buf = calloc(1, s->msg);
	if (!s->buf || socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		abort();
	s->server = fork_peer(fds[1], fds[0], echo_stream, s->msg);
	s->fd = fds[0];
}

int main(int argc, char **argv)
{
	struct peer s = { 1, NULL, -1, 0 };
	int parallel = peer_bench(argc, argv, "lat_unix", &s, 16u << 20, "16M", start, peer_round_trip);

	if (parallel <= 0)
		return parallel ? 1 : 2;
	micro("lat_unix", get_n());
	return 0;
}
