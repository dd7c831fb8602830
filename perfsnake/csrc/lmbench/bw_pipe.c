/*
 * bw_pipe: pipe bandwidth (lmbench's bw_pipe): a child writes chunks of
 * MSG_BYTES (default 64 KB) as fast as it can, this process reads them.
 * The program is bw_channel.c's, which bw_unix shares over a Unix stream
 * socket pair.
 *
 * usage: bw_pipe [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "bw_pipe <MB/s> MB/s" (all processes together when parallel).
 */
#include "bw_channel.h"

#include <unistd.h>

static int channel(int fds[2])
{
	return pipe(fds);
}

int main(int argc, char **argv)
{
	return bw_channel_main(argc, argv, "bw_pipe", channel);
}
