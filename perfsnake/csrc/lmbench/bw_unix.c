/*
 * bw_unix: Unix stream-socket bandwidth (lmbench's bw_unix): bw_pipe's
 * program over socketpair(AF_UNIX, SOCK_STREAM) instead of a pipe.
 *
 * usage: bw_unix [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [MSG_BYTES]
 * Prints "bw_unix <MB/s> MB/s".
 */
#define BW_UNIX
#define BW_NAME "bw_unix"
#include "bw_pipe.c"
