/*
 * psplace: a thread-placement daemon (in the spirit of the paper's schedkit).
 *
 * Started before a benchmark run, it finds the run's processes (those whose
 * working directory is the run directory, outside the daemon's own process
 * group), watches their threads in /proc/<pid>/task and pins each new thread
 * with sched_setaffinity according to a policy:
 *
 *   normal       leave threads alone (only observe and log)
 *   close        pack threads onto the fewest NUMA nodes and cores
 *   far          spread threads over NUMA nodes and cores
 *   round_robin  thread k on the k-th online CPU, in CPU number order
 *
 * Every decision is logged as "tid <tid> thread <k> policy <p> cpu <c>" on
 * stdout (the run directory keeps it). Stops on SIGTERM/SIGINT with a
 * summary line.
 *
 * Processes named in --observers (the run's shell, perf stat, time,
 * strace, ...: they start or watch the program) are not the application:
 * their threads take no slot, so thread 0 is the program's main thread.
 * They are looked at again on every scan: a wrapper's child is named after
 * the wrapper until it execs the program.
 *
 * usage: psplace --policy NAME --dir RUN_DIR [--interval-ms MS] [--observers NAME,...]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 1024
#define MAX_THREADS 65536

struct cpu {
	int id, core, package, node;
};

static struct cpu cpus[MAX_CPUS];
static int ncpus;
static volatile sig_atomic_t stop;

static long read_long(const char *path, long fallback)
{
	FILE *f = fopen(path, "r");
	long v = fallback;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = fallback;
		fclose(f);
	}
	return v;
}

/* Parse a kernel CPU list ("0-3,8") into a membership array. */
static void parse_list(const char *text, char *member, int max)
{
	const char *p = text;

	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;
		if (end == p)
			break;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			p = end;
		}
		for (long c = lo; c <= hi && c < max; c++)
			if (c >= 0)
				member[c] = 1;
		if (*p == ',')
			p++;
	}
}

static int read_list(const char *path, char *member, int max)
{
	char buf[8192];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	parse_list(buf, member, max);
	return 0;
}

static void read_topology(void)
{
	char online[MAX_CPUS] = { 0 }, path[128];

	if (read_list("/sys/devices/system/cpu/online", online, MAX_CPUS))
		online[0] = 1;
	for (int c = 0; c < MAX_CPUS; c++) {
		if (!online[c])
			continue;
		struct cpu *cpu = &cpus[ncpus++];
		cpu->id = c;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
		cpu->core = (int)read_long(path, c);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		cpu->package = (int)read_long(path, 0);
		cpu->node = 0;
	}
	for (int node = 0; node < 256; node++) {
		char member[MAX_CPUS] = { 0 };
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
		if (read_list(path, member, MAX_CPUS))
			continue;
		for (int i = 0; i < ncpus; i++)
			if (member[cpus[i].id])
				cpus[i].node = node;
	}
}

/* ---- policies: each maps the k-th thread to a CPU (or -1: leave it) ---- */

static int order[MAX_CPUS];

static int cmp_close(const void *a, const void *b)
{
	const struct cpu *x = &cpus[*(const int *)a], *y = &cpus[*(const int *)b];
	if (x->node != y->node)
		return x->node - y->node;
	if (x->package != y->package)
		return x->package - y->package;
	if (x->core != y->core)
		return x->core - y->core;
	return x->id - y->id;
}

/* Rank of a CPU among the SMT siblings of its core (0 for the first). */
static int sibling_rank(int i)
{
	int rank = 0;
	for (int j = 0; j < ncpus; j++)
		if (cpus[j].node == cpus[i].node && cpus[j].package == cpus[i].package &&
		    cpus[j].core == cpus[i].core && cpus[j].id < cpus[i].id)
			rank++;
	return rank;
}

static int cmp_far(const void *a, const void *b)
{
	int i = *(const int *)a, j = *(const int *)b;
	int ri = sibling_rank(i), rj = sibling_rank(j);
	/* One thread per core first, then the siblings; nodes alternate. */
	if (ri != rj)
		return ri - rj;
	if (cpus[i].core != cpus[j].core)
		return cpus[i].core - cpus[j].core;
	if (cpus[i].node != cpus[j].node)
		return cpus[i].node - cpus[j].node;
	return cpus[i].id - cpus[j].id;
}

static int pick_none(long k)
{
	(void)k;
	return -1;
}

static int pick_order(long k)
{
	return cpus[order[k % ncpus]].id;
}

struct policy {
	const char *name;
	int (*cmp)(const void *, const void *); /* NULL: CPU number order */
	int (*pick)(long k);
};

static const struct policy policies[] = {
	{ "normal", NULL, pick_none },
	{ "close", cmp_close, pick_order },
	{ "far", cmp_far, pick_order },
	{ "round_robin", NULL, pick_order },
};

/* ---- watching the run ------------------------------------------------------ */

/* When a thread was pinned, on the clock `perf record -k monotonic` uses, so
 * a scheduler timeline can tell the daemon's moves from the scheduler's. */
static double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int seen_tid[MAX_THREADS];
static long nseen;

static int already_seen(int tid)
{
	for (long i = 0; i < nseen; i++)
		if (seen_tid[i] == tid)
			return 1;
	return 0;
}

#define MAX_OBSERVERS 64
static char observers[MAX_OBSERVERS][16]; /* process names (comm: at most 15 bytes) */
static int nobservers;
static int logged_observer[MAX_THREADS];
static long nlogged;

static void parse_observers(char *list)
{
	for (char *name = strtok(list, ","); name && nobservers < MAX_OBSERVERS; name = strtok(NULL, ","))
		snprintf(observers[nobservers++], sizeof(observers[0]), "%s", name);
}

/* The process's name is an observer's (its comm, as /proc/<pid>/comm has it). */
static int is_observer(int pid)
{
	char path[64], comm[32];
	FILE *f;

	if (!nobservers)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	for (int i = 0; i < nobservers; i++)
		if (!strcmp(comm, observers[i]))
			return 1;
	return 0;
}

static void log_observer(int pid)
{
	for (long i = 0; i < nlogged; i++)
		if (logged_observer[i] == pid)
			return;
	if (nlogged < MAX_THREADS)
		logged_observer[nlogged++] = pid;
	printf("pid %d observer not placed\n", pid);
	fflush(stdout);
}

static int in_run(int pid, const char *run_dir, pid_t my_pgid)
{
	char path[64], cwd[PATH_MAX];
	ssize_t n;

	if (getpgid(pid) == my_pgid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
	n = readlink(path, cwd, sizeof(cwd) - 1);
	if (n < 0)
		return 0;
	cwd[n] = 0;
	return strcmp(cwd, run_dir) == 0;
}

static void scan(const struct policy *pol, const char *run_dir, pid_t my_pgid)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;

	if (!proc)
		return;
	while ((e = readdir(proc))) {
		int pid = atoi(e->d_name);
		char path[64];
		DIR *task;
		struct dirent *t;

		if (pid <= 0 || !in_run(pid, run_dir, my_pgid))
			continue;
		if (is_observer(pid)) {
			log_observer(pid);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		task = opendir(path);
		if (!task)
			continue;
		while ((t = readdir(task))) {
			int tid = atoi(t->d_name);
			int cpu;

			if (tid <= 0 || already_seen(tid) || nseen >= MAX_THREADS)
				continue;
			seen_tid[nseen] = tid;
			cpu = pol->pick(nseen);
			if (cpu >= 0) {
				cpu_set_t set;
				double at = monotonic_s(); /* before the call: the pin's moves all come after it */
				CPU_ZERO(&set);
				CPU_SET(cpu, &set);
				if (sched_setaffinity(tid, sizeof(set), &set))
					printf("tid %d thread %ld policy %s cpu %d error %s\n", tid, nseen, pol->name, cpu, strerror(errno));
				else
					printf("tid %d thread %ld policy %s cpu %d pid %d at %.6f\n", tid, nseen, pol->name, cpu, pid, at);
			} else {
				printf("tid %d thread %ld policy %s cpu - pid %d\n", tid, nseen, pol->name, pid);
			}
			fflush(stdout);
			nseen++;
		}
		closedir(task);
	}
	closedir(proc);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *policy = NULL, *dir = NULL;
	const struct policy *pol = NULL;
	long interval_ms = 5;
	char run_dir[PATH_MAX];
	struct timespec tick;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--policy"))
			policy = argv[i + 1];
		else if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--interval-ms"))
			interval_ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--observers"))
			parse_observers(argv[i + 1]);
	}
	for (size_t i = 0; policy && i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(policies[i].name, policy))
			pol = &policies[i];
	if (!pol || !dir || interval_ms < 1 || !realpath(dir, run_dir)) {
		fprintf(stderr, "usage: psplace --policy normal|close|far|round_robin --dir RUN_DIR [--interval-ms MS] "
				"[--observers NAME,...]\n");
		return 2;
	}
	read_topology();
	for (int i = 0; i < ncpus; i++)
		order[i] = i;
	if (pol->cmp)
		qsort(order, (size_t)ncpus, sizeof(order[0]), pol->cmp);
	printf("psplace policy %s cpus", pol->name);
	for (int i = 0; i < ncpus; i++)
		printf(" %d(node %d core %d)", cpus[order[i]].id, cpus[order[i]].node, cpus[order[i]].core);
	printf("\n");
	fflush(stdout);

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	tick.tv_sec = interval_ms / 1000;
	tick.tv_nsec = (interval_ms % 1000) * 1000000L;
	while (!stop) {
		scan(pol, run_dir, getpgrp());
		nanosleep(&tick, NULL);
	}
	printf("psplace done: %ld threads placed with policy %s\n", nseen, pol->name);
	return 0;
}
