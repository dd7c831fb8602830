/*
 * bw_file_rd's and bw_mmap_rd's program (bw_file.c): a private file of
 * SIZE_KB, written first so it sits in the page cache, read again and again
 * through read() or through mmap().
 */
#ifndef PERFSNAKE_BW_FILE_H
#define PERFSNAKE_BW_FILE_H

/* The whole program, named `name` in its file, usage and result lines;
 * `keep_open` names the operation that keeps the file open (io_only,
 * mmap_only), `mapped` reads through mmap(). Returns main()'s exit code. */
int bw_file_main(int argc, char **argv, const char *name, const char *keep_open, int mapped);

#endif
