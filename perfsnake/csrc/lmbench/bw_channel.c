/*
 * The body of bw_pipe and bw_unix (bw_channel.h): lmbench's bw_pipe over
 * the channel each program opens.
 */
#define _GNU_SOURCE
#include "bw_channel.h"

#include "bench.h"

#include <string.h>

#include "net.h"

/* Set once by bw_channel_main(), before the harness forks its processes. */
static channel_f open_channel;

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
	if (!s->buf || open_channel(fds))
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

int bw_channel_main(int argc, char **argv, const char *name, channel_f channel)
{
	struct peer s = { 65536, NULL, -1, 0 };
	int parallel;

	open_channel = channel;
	parallel = peer_bench(argc, argv, name, &s, 64u << 20, "64M", start, drain);
	if (parallel <= 0)
		return parallel ? 1 : 2;
	mb(name, get_n() * s.msg * (uint64_t)parallel);
	return 0;
}
