/*
 * lat_fs: file creation and deletion (lmbench's lat_fs): per file of
 * SIZE_KB kilobytes (lmbench's sizes: 0, 1, 4, 10), creat() + write() of
 * the contents (128 KB at a time at most) + close(), then unlink().
 *
 * As in lmbench, each timed interval works on files it names beforehand,
 * spread over a fresh tree of directories under a private directory in DIR
 * (default $TMPDIR or /tmp) with at most 100 entries per directory, and
 * goes through them from the last name to the first. The create interval
 * starts with no file and its files are deleted after it; the delete
 * interval's files are created before it. Naming, making the directories
 * and the other side's work are untimed.
 *
 * The harness also calls the benchmark outside timed intervals (sizing the
 * interval, the warm-up, a parallel child's load while it waits): such a
 * call does the whole cycle itself (names, directories, create, delete), so
 * nothing is left behind and the load is the benchmark's.
 *
 * usage: lat_fs [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB [DIR]
 * Prints "lat_fs.<size>k <us> us" per file created (lmbench's summary table
 * prints this), its ".min", "lat_fs.<size>k.creates_per_s <n> /s" (lat_fs's
 * own figure: files per second of one process), then the same for deletion
 * ("lat_fs.<size>k.delete", ".delete.min", ".deletes_per_s").
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FANOUT 100 /* entries per directory, lmbench's -n default */
#define CHUNK (128 * 1024) /* lmbench's largest write */
#define MAX_KB (64 * 1024)

struct state {
	const char *dir; /* where the private directory goes */
	size_t size; /* bytes per file */
	int deleting; /* the benchmark unlinks (else it creates) */
	char top[4096]; /* this process's private directory ("" when none) */
	char *buf; /* a file's contents, CHUNK bytes at most */
	char *names; /* files [0, count) of the tree, name_len bytes each */
	size_t name_len, names_bytes;
	iter_t count; /* files named (and directories made) */
	int depth; /* directory levels between top and the files */
	iter_t ready; /* the next call is a timed interval over this many files */
};

/* Levels of directories so that no directory holds more than FANOUT entries. */
static int depth_for(iter_t n)
{
	int depth = 0;

	for (iter_t reach = FANOUT; reach < n; reach *= FANOUT)
		depth++;
	return depth;
}

/* The path of file i's directory `levels` levels below top (levels <= depth). */
static void dir_of(const struct state *s, iter_t i, int levels, char *out, size_t len)
{
	size_t used = (size_t)snprintf(out, len, "%s", s->top);
	iter_t div = 1;

	for (int l = 0; l < s->depth; l++)
		div *= FANOUT;
	for (int l = 0; l < levels && used < len; l++) {
		used += (size_t)snprintf(out + used, len - used, "/%02u", (unsigned)((i / div) % FANOUT));
		div /= FANOUT;
	}
}

/* The path of file i. */
static void file_of(const struct state *s, iter_t i, char *out, size_t len)
{
	size_t used;

	dir_of(s, i, s->depth, out, len);
	used = strlen(out);
	if (used < len)
		snprintf(out + used, len - used, "/%02u", (unsigned)(i % FANOUT));
}

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "lat_fs: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

/* The first directory (at `level`) of file i's branch that file i - 1 lacks. */
static int first_new_level(iter_t i, int depth)
{
	iter_t div = FANOUT;

	if (i == 0)
		return 0;
	for (int l = depth; l > 0; l--, div *= FANOUT)
		if (i % div)
			return l;
	return 0;
}

/* Names n files and makes their directories (untimed). */
static void name_files(struct state *s, iter_t n)
{
	char path[4096];

	s->depth = depth_for(n);
	s->name_len = strlen(s->top) + 3 * (size_t)s->depth + 4;
	if (s->name_len * n > s->names_bytes) {
		free(s->names);
		s->names_bytes = s->name_len * n;
		s->names = malloc(s->names_bytes);
		if (!s->names)
			abort();
	}
	for (iter_t i = 0; i < n; i++) {
		for (int l = i % FANOUT ? s->depth : first_new_level(i, s->depth); l < s->depth; l++) {
			dir_of(s, i, l + 1, path, sizeof(path));
			if (mkdir(path, 0700))
				fail("mkdir", path);
		}
		file_of(s, i, s->names + i * s->name_len, s->name_len);
	}
	s->count = n;
}

/* Removes the directories of the named files, deepest first (untimed). */
static void remove_tree(struct state *s)
{
	char path[4096];

	for (int l = s->depth; l > 0; l--)
		for (iter_t i = 0; i < s->count; i++) {
			iter_t span = 1;
			for (int k = l; k <= s->depth; k++)
				span *= FANOUT;
			if (i % span == 0) {
				dir_of(s, i, l, path, sizeof(path));
				if (rmdir(path))
					fail("rmdir", path);
			}
		}
	s->count = 0;
}

/* The timed loops: lmbench's order, from the last name to the first. */
static void create_files(struct state *s, iter_t n)
{
	while (n--) {
		const char *name = s->names + n * s->name_len;
		int fd = creat(name, 0666);

		if (fd < 0)
			fail("creat", name);
		for (size_t left = s->size; left;) {
			size_t chunk = left < CHUNK ? left : CHUNK;
			if (write(fd, s->buf, chunk) != (ssize_t)chunk)
				fail("write", name);
			left -= chunk;
		}
		close(fd);
	}
}

static void delete_files(struct state *s, iter_t n)
{
	while (n--) {
		const char *name = s->names + n * s->name_len;
		if (unlink(name))
			fail("unlink", name);
	}
}

static void benchmark(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (s->ready == n) { /* a timed interval, prepared by before() */
		s->ready = 0;
		if (s->deleting)
			delete_files(s, n);
		else
			create_files(s, n);
		return;
	}
	/* Outside an interval: the whole cycle. */
	name_files(s, n);
	create_files(s, n);
	delete_files(s, n);
	remove_tree(s);
}

/* n == 0: once per process, its private directory; else before an
 * interval of n files: their names, directories, and for deletion the
 * files themselves. */
static void before(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n == 0) {
		if (s->top[0])
			return;
		snprintf(s->top, sizeof(s->top), "%s/lat_fs.%d.XXXXXX", s->dir, (int)getpid());
		if (!mkdtemp(s->top))
			fail("mkdtemp", s->top);
		s->buf = calloc(1, CHUNK);
		if (!s->buf)
			abort();
		return;
	}
	name_files(s, n);
	if (s->deleting)
		create_files(s, n);
	s->ready = n;
}

/* After an interval: the files left (created ones), then the directories;
 * n == 0: the private directory too. */
static void after(iter_t n, void *cookie)
{
	struct state *s = cookie;

	if (n != 0) {
		if (!s->deleting)
			delete_files(s, s->count);
		remove_tree(s);
		return;
	}
	if (!s->top[0])
		return;
	if (rmdir(s->top))
		fail("rmdir", s->top);
	s->top[0] = 0;
	free(s->buf);
	free(s->names);
	s->buf = s->names = NULL;
	s->names_bytes = 0;
	s->count = 0;
}

static int measure(struct state *s, int parallel, int warmup, int reps, const char *label)
{
	char name[128];

	if (benchmp(before, benchmark, after, 0, parallel, warmup, reps, s))
		return 1;
	snprintf(name, sizeof(name), "lat_fs.%zuk%s", s->size / 1024, label);
	micro(name, get_n());
	snprintf(name, sizeof(name), "lat_fs.%zuk.%s_per_s", s->size / 1024, s->deleting ? "deletes" : "creates");
	result_line(name, 1e9 * (double)get_n() / (double)(gettime() ? gettime() : 1), "/s");
	return 0;
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s;
	char *end;
	long kb;

	memset(&s, 0, sizeof(s));
	s.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 2)
		goto usage;
	kb = strtol(argv[first], &end, 10);
	if (*end || end == argv[first] || kb < 0 || kb > MAX_KB)
		goto usage;
	s.size = (size_t)kb * 1024;
	if (first + 1 < argc)
		s.dir = argv[first + 1];
	if (measure(&s, parallel, warmup, reps, ""))
		return 1;
	s.deleting = 1;
	return measure(&s, parallel, warmup, reps, ".delete");
usage:
	fprintf(stderr, "usage: lat_fs [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] SIZE_KB(0..%d) [DIR]\n",
		MAX_KB);
	return 2;
}
