/*
 * psrun: runs one benchmark command and records how it went.
 *
 * The timed interval is fork() to the reaping wait4() and nothing else: no
 * interpreter, no logging, no file writes happen inside it. Afterwards psrun
 * writes status.json (atomically, tmp + rename) so that a status file exists
 * only for a run that finished, crashed or timed out; an aborted run (psrun
 * signalled, or its parent gone) leaves no status file and is re-run.
 *
 * usage: psrun --dir RUN_DIR [--timeout SEC] [--grace SEC] [--watch-stdin]
 *              -- PROG [ARG...]
 *
 * --watch-stdin: end-of-file on psrun's standard input aborts the run like a
 * dead parent. Across ssh or a container engine the parent is not the
 * workflow, but the workflow holds the other end of that pipe, so a killed
 * workflow or a dropped connection still stops the benchmark.
 *
 * Exit status: 0 when the run was recorded (whatever the benchmark did),
 * 2 on a usage or setup error, 128+N when aborted by signal N.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "psrun: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double ts_sec(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return ts_sec(b) - ts_sec(a);
}

static void iso_utc(const struct timespec *t, char *buf, size_t len)
{
	struct tm tm;
	char base[32];

	gmtime_r(&t->tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06ldZ", base, t->tv_nsec / 1000);
}

static int open_out(const char *dir, const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path);
	return fd;
}

/* Signals psrun itself reacts to; blocked so that sigtimedwait sees them. */
static void watched_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

static int watch_stdin;

/* True once standard input reached end-of-file (data is discarded). */
static int stdin_closed(void)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char buf[256];

	while (poll(&p, 1, 0) > 0) {
		if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
			return 1;
		if (read(0, buf, sizeof(buf)) <= 0)
			return 1;
	}
	return 0;
}

/* Wait for the child, but no longer than `limit` seconds (negative: forever).
 * Returns 1 when reaped, 0 on time-out, -signo when psrun was signalled or
 * its parent died (reported as SIGHUP). */
static int wait_child(pid_t pid, pid_t parent, double limit, int *wstatus,
		      struct rusage *ru)
{
	struct timespec start, now, tick;
	sigset_t set;
	siginfo_t info;
	double left, step;
	int sig;

	watched_set(&set);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t r = wait4(pid, wstatus, WNOHANG, ru);

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			die("wait4");
		if (getppid() != parent || (watch_stdin && stdin_closed()))
			return -SIGHUP;
		/* Wake regularly to notice a dead parent or a closed stdin. */
		step = watch_stdin ? 0.2 : 1.0;
		if (limit >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			left = limit - ts_diff(&start, &now);
			if (left <= 0)
				return 0;
			if (left < step)
				step = left;
		}
		tick.tv_sec = (time_t)step;
		tick.tv_nsec = (long)((step - (double)tick.tv_sec) * 1e9);
		sig = sigtimedwait(&set, &info, &tick);
		if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
			return -sig;
	}
}

/* SIGTERM the whole process group, then SIGKILL it after `grace` seconds. */
static int stop_group(pid_t pid, double grace, int *wstatus, struct rusage *ru)
{
	int r;

	watch_stdin = 0; /* already stopping: give the grace period in full */
	kill(-pid, SIGTERM);
	r = wait_child(pid, getppid(), grace, wstatus, ru);
	if (r != 1) {
		kill(-pid, SIGKILL);
		while (wait4(pid, wstatus, 0, ru) < 0 && errno == EINTR)
			;
	}
	return r;
}

static void write_status(const char *dir, const char *status, int exit_code,
			 int signo, const struct timespec *t0,
			 const struct timespec *t1, const struct timespec *w0,
			 const struct timespec *w1, const struct rusage *ru)
{
	char tmp[4096], path[4096], start[64], end[64], job[32] = "";
	const char *slurm_job = getenv("SLURM_JOB_ID");
	struct utsname host;
	FILE *f;

	/* Which machine measured: on a cluster, the compute node and job. */
	if (uname(&host))
		strcpy(host.nodename, "unknown");
	if (slurm_job && strspn(slurm_job, "0123456789") == strlen(slurm_job))
		snprintf(job, sizeof(job), "%s", slurm_job);

	snprintf(tmp, sizeof(tmp), "%s/.status.json.tmp", dir);
	snprintf(path, sizeof(path), "%s/status.json", dir);
	iso_utc(w0, start, sizeof(start));
	iso_utc(w1, end, sizeof(end));
	f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f,
		"{\"status\": \"%s\", \"exit_code\": %d, \"signal\": %d, "
		"\"wall_s\": %.9f, \"start\": \"%s\", \"end\": \"%s\", "
		"\"start_epoch\": %.6f, \"end_epoch\": %.6f, "
		"\"utime_s\": %.6f, \"stime_s\": %.6f, \"maxrss_kb\": %ld, "
		"\"host\": \"%s\", \"slurm_job_id\": \"%s\"}\n",
		status, exit_code, signo, ts_diff(t0, t1), start, end,
		ts_sec(w0), ts_sec(w1),
		ts_sec(&(struct timespec){ ru->ru_utime.tv_sec,
					   ru->ru_utime.tv_usec * 1000 }),
		ts_sec(&(struct timespec){ ru->ru_stime.tv_sec,
					   ru->ru_stime.tv_usec * 1000 }),
		ru->ru_maxrss, host.nodename, job);
	if (fflush(f) || fsync(fileno(f)) || fclose(f))
		die(tmp);
	if (rename(tmp, path))
		die(path);
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	double timeout = -1, grace = 5;
	struct timespec t0, t1, w0, w1;
	struct rusage ru;
	sigset_t set, old;
	int i, out, err, in, wstatus = 0, r, exit_code, signo = 0;
	const char *status;
	pid_t pid, parent = getppid();

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = atof(argv[++i]);
		else if (!strcmp(argv[i], "--grace") && i + 1 < argc)
			grace = atof(argv[++i]);
		else if (!strcmp(argv[i], "--watch-stdin"))
			watch_stdin = 1;
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			break;
	}
	if (!dir || i >= argc) {
		fprintf(stderr, "usage: psrun --dir RUN_DIR [--timeout SEC] "
				"[--grace SEC] [--watch-stdin] -- PROG [ARG...]\n");
		return 2;
	}
	out = open_out(dir, "stdout.txt");
	err = open_out(dir, "stderr.txt");
	in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("/dev/null");

	watched_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	memset(&ru, 0, sizeof(ru));

	clock_gettime(CLOCK_REALTIME, &w0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* Own process group, so a time-out can stop every descendant. */
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(argv[i], &argv[i]);
		dprintf(2, "psrun: exec %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* also from the parent: no race with kill(-pid) */
	r = wait_child(pid, parent, timeout, &wstatus, &ru);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_REALTIME, &w1);

	if (r < 0) {
		/* Aborted from outside: stop the run and leave no status file. */
		stop_group(pid, grace, &wstatus, &ru);
		fprintf(stderr, "psrun: aborted by signal %d\n", -r);
		return 128 - r;
	}
	if (r == 0) {
		stop_group(pid, grace, &wstatus, &ru);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		clock_gettime(CLOCK_REALTIME, &w1);
		status = "timeout";
	}
	/* Descendants left behind by the benchmark must not outlive the run. */
	kill(-pid, SIGKILL);

	if (WIFSIGNALED(wstatus)) {
		signo = WTERMSIG(wstatus);
		exit_code = 128 + signo;
	} else {
		exit_code = WEXITSTATUS(wstatus);
	}
	if (r == 1)
		status = exit_code == 0 ? "ok" : "failed";
	write_status(dir, status, exit_code, signo, &t0, &t1, &w0, &w1, &ru);
	return 0;
}
