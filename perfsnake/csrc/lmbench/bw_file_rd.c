/*
 * bw_file_rd: file re-read bandwidth (lmbench's bw_file_rd): a private file
 * of SIZE_KB, written first so it sits in the page cache, read again and
 * again in 64 KB read() calls.
 *   io_only     the file stays open; each iteration reads it from offset 0
 *   open2close  each iteration opens, reads and closes it
 * Every byte read is summed (bw_file.c says how). The program is
 * bw_file.c's, which bw_mmap_rd shares over mmap() instead of read().
 *
 * usage: bw_file_rd [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB io_only|open2close [DIR]
 * DIR holds the file (default $TMPDIR or /tmp); it is removed at the end.
 * Prints "bw_file_rd.<op> <MB/s> MB/s".
 */
#include "bw_file.h"

int main(int argc, char **argv)
{
	return bw_file_main(argc, argv, "bw_file_rd", "io_only", 0);
}
