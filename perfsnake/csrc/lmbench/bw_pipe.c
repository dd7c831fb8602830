/*
 * bw_pipe: pipe bandwidth (lmbench's bw_pipe): a child writes chunks of
 * MSG_BYTES (default 64 KB) as fast as it can, this process reads them.
 * bw_unix.c builds the same program over a Unix stream socket pair.
 *
 * usage: bw_pipe [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "bw_pipe <MB/s> MB/s" (all processes together when parallel).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <string.h>

#include "net.h"

#ifndef BW_NAME
#define BW_NAME "bw_pipe"
#endif

static int channel(int fds[2])
{
#ifdef BW_UNIX
	return socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
#else
	return pipe(fds);
#endif
}

/* The writer: stops when the reader closes (EPIPE / SIGPIPE) or dies. */
static void flood(int fd, size_t chunk)
{
	char *buf = malloc(chunk);

	if (!buf)
		_exit(1);
	memset(buf, 'b', chunk);
	signal(SIGPIPE, SIG_DFL); /* reader gone: die quietly */
	while (write(fd, buf, chunk) > 0)
		;
}

/* Per process: its own channel and writer. */
static void start(iter_t n, void *cookie)
{
	struct peer *s = cookie;
	int fds[2];

	if (n != 0 || s->server)
		return;
	s->buf = malloc(s->msg);
	if (!s->buf || channel(fds))
		abort();
	s->server = fork_peer(fds[1], fds[0], flood, s->msg);
	s->fd = fds[0];
}

/* One iteration: one whole chunk read, however the kernel splits it. */
static void drain(iter_t n, void *cookie)
{
	struct peer *s = cookie;

	while (n--)
		for (size_t got = 0; got < s->msg;) {
			ssize_t r = read(s->fd, s->buf, s->msg - got);
			if (r <= 0)
				abort();
			got += (size_t)r;
		}
}

int main(int argc, char **argv)
{
	struct peer s = { 65536, NULL, -1, 0 };
	int parallel = peer_bench(argc, argv, BW_NAME, &s, 64u << 20, "64M", start, drain);

	if (parallel <= 0)
		return parallel ? 1 : 2;
	mb(BW_NAME, get_n() * s.msg * (uint64_t)parallel);
	return 0;
}
