/*
 * bw_pipe's and bw_unix's program (bw_channel.c): a child writes chunks of
 * MSG_BYTES as fast as it can into one end of a channel, this process
 * reads them from the other. The two programs differ only in the channel.
 */
#ifndef PERFSNAKE_BW_CHANNEL_H
#define PERFSNAKE_BW_CHANNEL_H

/* Opens the channel: fds[0] is read, fds[1] written (pipe() or socketpair()). */
typedef int (*channel_f)(int fds[2]);

/* The whole program, named `name` in its usage and result lines; returns
 * main()'s exit code. */
int bw_channel_main(int argc, char **argv, const char *name, channel_f channel);

#endif
