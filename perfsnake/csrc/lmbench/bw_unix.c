/*
 * bw_unix: Unix stream-socket bandwidth (lmbench's bw_unix): bw_pipe's
 * program (bw_channel.c) over socketpair(AF_UNIX, SOCK_STREAM) instead of
 * a pipe.
 *
 * usage: bw_unix [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "bw_unix <MB/s> MB/s".
 */
#include "bw_channel.h"

#include <sys/socket.h>

static int channel(int fds[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
}

int main(int argc, char **argv)
{
	return bw_channel_main(argc, argv, "bw_unix", channel);
}
