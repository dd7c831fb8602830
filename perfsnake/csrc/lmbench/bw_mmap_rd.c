/*
 * bw_mmap_rd: mapped-file re-read bandwidth (lmbench's bw_mmap_rd):
 * bw_file_rd's program (bw_file.c) over mmap() instead of read().
 *   mmap_only   the file stays mapped; each iteration sums it
 *   open2close  each iteration opens, maps, sums, unmaps and closes it
 *
 * usage: bw_mmap_rd [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB mmap_only|open2close [DIR]
 * Prints "bw_mmap_rd.<op> <MB/s> MB/s".
 */
#include "bw_file.h"

int main(int argc, char **argv)
{
	return bw_file_main(argc, argv, "bw_mmap_rd", "mmap_only", 1);
}
