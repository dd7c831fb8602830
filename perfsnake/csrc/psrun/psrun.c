/*
 * psrun: runs one benchmark command and records how it went.
 *
 * The timed interval is fork() to the reaping wait4() and nothing else: no
 * interpreter, no logging, no file writes happen inside it. Afterwards psrun
 * writes status.json (atomically, tmp + rename) so that a status file exists
 * only for a run that finished, crashed or timed out; an aborted run (psrun
 * signalled, or its parent gone) leaves no status file and is re-run.
 *
 * Containment: every process the benchmark starts ends with the run. Where a
 * cgroup v2 directory can be created (root, or a delegated subtree), the
 * benchmark is forked straight into a cgroup of its own (clone3 with
 * CLONE_INTO_CGROUP: no extra step inside the timed interval) and the whole
 * cgroup is killed when the benchmark ends, whatever the processes did with
 * sessions or double forks. Elsewhere psrun is a child subreaper and kills
 * every descendant left. status.json says which ("containment").
 *
 * Dying with the workflow: psrun leaves the caller's process group, so a kill
 * of the workflow's group does not take psrun away before it has stopped the
 * benchmark. It notices its parent's death (death signal, getppid), and a
 * small sentinel child left in the caller's process group dies of any
 * signal sent to that group (Ctrl-C, kill -9 -PGID), which psrun treats as
 * an abort. A launcher killed outright (kill -9 of every process of the
 * workflow's session, an OOM kill) is cleaned up by its guardian: a small
 * process in a session of its own, blocked on a pipe from psrun, which on
 * end-of-file without psrun's "done" kills what is left in the run's cgroup,
 * or working in the run directory. Should the guardian die too, the next
 * attempt of the same run does it: at start, psrun kills what is left in the
 * run's cgroup, or (state file RUN_DIR/.psrun.state present) working in the
 * run directory.
 *
 * usage: psrun --dir RUN_DIR [--timeout SEC] [--grace SEC] [--watch-stdin]
 *              [--lock-fd FD] [--no-fsync] -- PROG [ARG...]
 *        psrun --serve [--grace SEC] [--no-fsync]
 *
 * --serve: one launcher for a batch's runs. Standard input is a Unix
 * SOCK_SEQPACKET socket; each message is a run ("TIMEOUT\0RUN_DIR\0PROG\0
 * ARG\0...", TIMEOUT "-" for none, the host lock's descriptor attached as
 * SCM_RIGHTS when there is one), run as the single form runs it (its own
 * cgroup, status.json, the state file, the sweep of an earlier attempt),
 * answered by one message once it is recorded: how it ended, status.json's
 * "status" ("ok", "failed", "timeout"). The sentinel, the
 * guardian and psrun's own start are paid once per batch instead of once
 * per run. End of file: psrun exits 0. An aborted run (signal, dead
 * parent) ends psrun as it ends the single form (no answer; exit 128+N);
 * a setup error exits 2: the caller starts a new one for the next run.
 *
 * --watch-stdin: end-of-file on psrun's standard input aborts the run like a
 * dead parent. Across ssh or a container engine the parent is not the
 * workflow, but the workflow holds the other end of that pipe, so a killed
 * workflow or a dropped connection still stops the benchmark.
 * --lock-fd: an inherited descriptor of the host's benchmark lock (flock);
 * psrun keeps it open, and not the benchmark, so the lock stays held until
 * every process of the run is gone, even if the workflow died first.
 * PERFSNAKE_CGROUP: the cgroup v2 directory under which run cgroups are made
 * (default: "perfsnake" at the cgroup2 mount, or in psrun's own cgroup when
 * that is delegated); "none" forces the subreaper.
 * --no-fsync: status.json is renamed into place without an fsync first
 * (still atomic; durable once the caller syncs the file system: a batch job
 * does, once, before its marker). An fsync costs about as much as a short
 * run's whole launch on a VM disk.
 *
 * Exit status: 0 when the run was recorded (whatever the benchmark did),
 * 2 on a usage or setup error, 128+N when aborted by signal N.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

#define STATE_FILE ".psrun.state"
/* Seconds to wait for killed processes to be gone before giving up. */
#define KILL_WAIT_S 5.0

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

static double now_mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ts_sec(&t);
}

static void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

static void iso_utc(const struct timespec *t, char *buf, size_t len)
{
	/* The civil date by hand (H. Hinnant's days_from_civil inverse):
	 * glibc's gmtime_r and strftime read the time zone file first. */
	long long days = t->tv_sec / 86400, secs = t->tv_sec % 86400;
	long long z, era, doe, yoe, doy, mp, y, m, d;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = yoe + era * 400 + (m <= 2);
	snprintf(buf, len, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06ldZ", y,
		 m, d, secs / 3600, secs / 60 % 60, secs % 60,
		 t->tv_nsec / 1000);
}

/* A fresh file in the run directory: a link planted there (by an earlier
 * attempt's benchmark) is removed, never followed. */
static int open_out(const char *dir, const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path) && errno != ENOENT)
		die(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		die(path);
	return fd;
}

/* ---- /proc ------------------------------------------------------------ */

struct proc_info {
	pid_t ppid, pgrp, sid;
	unsigned long long start; /* clock ticks after boot */
	char state;
};

static int proc_info(pid_t pid, struct proc_info *pi)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* The command name may hold anything: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	if (sscanf(p + 2,
		   "%c %d %d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
		   "%*d %*d %*d %*d %llu",
		   &pi->state, &pi->ppid, &pi->pgrp, &pi->sid, &pi->start) != 5)
		return -1;
	return 0;
}

/* Calls fn(pid, info, arg) for every live process; returns how many matched
 * (fn returning 1). */
static int each_process(int (*fn)(pid_t, const struct proc_info *, void *),
			void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct proc_info pi;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0 || pid == getpid() || proc_info(pid, &pi) ||
		    pi.state == 'Z')
			continue;
		n += fn(pid, &pi, arg);
	}
	closedir(d);
	return n;
}

/* ---- the machine around the run ------------------------------------------ */

/* What collect turns into a run's load, available memory, mean frequency and
 * the CPU time other processes used while it ran (the machine's busy time
 * minus the run's own): read just before the clock starts and just after it
 * stops, outside the timed interval, so that the difference spans the run
 * alone (not the wait for the host lock, not the hooks). Negative: this
 * machine does not say. */
struct machine_snap {
	double load1, busy_s, steal_s, mem_mb, mhz;
	/* The machine's stall microseconds ("some" totals of /proc/pressure/cpu,
	 * memory, io), read only for a run without a cgroup of its own. */
	double psi_us[3];
};

/* The pressure files, in the order of the stall fields of status.json. */
static const char *const psi_names[3] = { "cpu", "memory", "io" };

/* A small /proc or /sys file into buf (NUL-terminated); its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* cpufreq's current-frequency files, found once per launcher (a serving
 * launcher reads them before and after each of its runs). */
static char **freq_files;
static int n_freq_files = -1;

static void find_freq_files(void)
{
	DIR *d = opendir("/sys/devices/system/cpu");
	struct dirent *e;
	char path[512];
	int cap = 0;

	n_freq_files = 0;
	while (d && (e = readdir(d))) {
		char **grown;

		if (strncmp(e->d_name, "cpu", 3) || e->d_name[3] < '0' || e->d_name[3] > '9')
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/%s/cpufreq/scaling_cur_freq", e->d_name);
		if (access(path, R_OK))
			continue;
		if (n_freq_files == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(freq_files, (size_t)cap * sizeof(*freq_files));
			if (!grown)
				break;
			freq_files = grown;
		}
		if (!(freq_files[n_freq_files] = strdup(path)))
			break;
		n_freq_files++;
	}
	if (d)
		closedir(d);
}

/* The "some" line's total= of a pressure file (microseconds), or -1. */
static double psi_some_us(const char *path)
{
	char buf[512], *p;

	if (read_small(path, buf, sizeof(buf)) <= 0 || strncmp(buf, "some ", 5) ||
	    !(p = strstr(buf, "total=")))
		return -1;
	return strtod(p + 6, NULL);
}

static void machine_snap(struct machine_snap *s, int system_psi)
{
	static long tck;
	char buf[4096], *p;
	unsigned long long v[8] = { 0 };
	double load, sum = 0;
	int i, n = 0;

	s->load1 = getloadavg(&load, 1) == 1 ? load : -1;
	/* The first line of /proc/stat: user nice system idle iowait irq
	 * softirq steal, in clock ticks; busy is all of them but idle and iowait. */
	s->busy_s = s->steal_s = -1;
	if (!tck)
		tck = sysconf(_SC_CLK_TCK);
	if (tck > 0 && read_small("/proc/stat", buf, 256) > 0 &&
	    sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) >= 4) {
		s->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)tck;
		s->steal_s = (double)v[7] / (double)tck;
	}
	for (i = 0; i < 3; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/pressure/%s", psi_names[i]);
		s->psi_us[i] = system_psi ? psi_some_us(path) : -1;
	}
	s->mem_mb = -1;
	if (read_small("/proc/meminfo", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "\nMemAvailable:")))
		s->mem_mb = strtod(p + 14, NULL) / 1024;
	if (n_freq_files < 0)
		find_freq_files();
	for (i = 0; i < n_freq_files; i++) {
		if (read_small(freq_files[i], buf, 64) > 0) {
			sum += strtod(buf, NULL) / 1000;
			n++;
		}
	}
	s->mhz = n ? sum / n : -1;
}

static void json_number(FILE *f, const char *name, double value, const char *format)
{
	fprintf(f, "\"%s\": ", name);
	if (value < 0)
		fputs("null", f);
	else
		fprintf(f, format, value);
}

static void json_snap(FILE *f, const struct machine_snap *s)
{
	fputc('{', f);
	json_number(f, "load1", s->load1, "%.2f");
	fputs(", ", f);
	json_number(f, "busy_s", s->busy_s, "%.2f");
	fputs(", ", f);
	json_number(f, "steal_s", s->steal_s, "%.2f");
	fputs(", ", f);
	json_number(f, "mem_available_mb", s->mem_mb, "%.1f");
	fputs(", ", f);
	json_number(f, "cpu_mhz", s->mhz, "%.1f");
	fputc('}', f);
}

/* What the run used and waited for, read once it has ended and before its
 * cgroup goes (outside the timed interval): the cgroup's peak memory (where
 * its memory controller is enabled) and its stall time; without a cgroup,
 * the machine's stall time over the run. Negative: not known. */
struct run_usage {
	double peak_bytes;
	double stall_us[3];  /* psi_names' order */
	const char *source;  /* of the stall times: "cgroup", "machine" or "" */
};

static void read_usage(const char *cg, const struct machine_snap *m0,
		       const struct machine_snap *m1, struct run_usage *u)
{
	char path[4200], buf[64];
	int i, have = 0;

	u->peak_bytes = -1;
	u->source = "";
	for (i = 0; i < 3; i++) {
		if (cg) {
			snprintf(path, sizeof(path), "%s/%s.pressure", cg, psi_names[i]);
			u->stall_us[i] = psi_some_us(path);
		} else {
			u->stall_us[i] = m0->psi_us[i] >= 0 && m1->psi_us[i] >= m0->psi_us[i]
				? m1->psi_us[i] - m0->psi_us[i] : -1;
		}
		have |= u->stall_us[i] >= 0;
	}
	if (have)
		u->source = cg ? "cgroup" : "machine";
	if (cg) {
		snprintf(path, sizeof(path), "%s/memory.peak", cg);
		if (read_small(path, buf, sizeof(buf)) > 0)
			u->peak_bytes = strtod(buf, NULL);
	}
}

static void json_usage(FILE *f, const struct run_usage *u)
{
	int i;

	fputc('{', f);
	json_number(f, "peak_memory_bytes", u->peak_bytes, "%.0f");
	for (i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), ", \"%s_stall_us", psi_names[i]);
		fputs(name, f);
		fputs("\": ", f);
		if (u->stall_us[i] < 0)
			fputs("null", f);
		else
			fprintf(f, "%.0f", u->stall_us[i]);
	}
	fprintf(f, ", \"stall_source\": \"%s\"}", u->source);
}

/* The sentinel's wait status once reaped (-1: alive); see sentinel_signal. */
static int sentinel_status = -1;
static pid_t sentinel_pid = -1; /* see start_sentinel */

static void reap_all(void)
{
	pid_t pid;
	int st;

	/* Serving, the sentinel outlives runs: its death is kept for the next. */
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		if (pid == sentinel_pid)
			sentinel_status = st;
}

/* ---- containment -------------------------------------------------------- */

static pid_t guardian_pid = -1;   /* see start_guardian */
static int guardian_fd = -1;     /* psrun's end of the guardian's pipe */
static int serving;              /* --serve: one psrun, one guardian, many runs */
static int use_cgroup;           /* run cgroup created and used */
static char cg_path[4096];       /* the run's cgroup directory */
static char containment[4200] = "subreaper";

/* The cgroup2 mount point, from the mount table (hybrid or unified). */
static int cgroup2_mount(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[1024], *dash;
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		dash = strstr(line, " - cgroup2 ");
		if (dash && sscanf(line, "%*s %*s %*s %*s %1023s", mnt) == 1 &&
		    !strchr(mnt, '\\')) {
			snprintf(out, len, "%s", mnt);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

/* psrun's own cgroup v2 path ("0::/path" in /proc/self/cgroup). */
static int own_cgroup(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[2048];
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, len, "%s", line + 3);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4200];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

/* Lines of cgroup.procs (processes in the cgroup), or -1. */
static int cg_count(const char *cg)
{
	char path[4200], line[64];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

static int cg_populated(const char *cg)
{
	char path[4200], line[128];
	FILE *f;
	int populated = 0;

	snprintf(path, sizeof(path), "%s/cgroup.events", cg);
	f = fopen(path, "re");
	if (!f)
		return cg_count(cg) > 0;
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "populated 1\n"))
			populated = 1;
	fclose(f);
	return populated;
}

/* SIGKILL every member (cgroup.kill, or one by one on kernels before 5.14),
 * wait until the cgroup is empty, then remove it. */
static void cg_destroy(const char *cg)
{
	char path[4200], line[64];
	double deadline = now_mono() + KILL_WAIT_S;
	FILE *f;

	while (cg_populated(cg) && now_mono() < deadline) {
		if (write_file(cg, "cgroup.kill", "1")) {
			snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
			f = fopen(path, "re");
			while (f && fgets(line, sizeof(line), f))
				kill((pid_t)atoi(line), SIGKILL);
			if (f)
				fclose(f);
		}
		reap_all(); /* orphans reparented to psrun, the subreaper */
		nap_ms(2);
	}
	if (rmdir(cg) && errno != ENOENT)
		fprintf(stderr, "psrun: rmdir %s: %s\n", cg, strerror(errno));
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Where run cgroups go: $PERFSNAKE_CGROUP, else "perfsnake" at the top of
 * the cgroup2 mount (root), else in psrun's own, delegated cgroup. */
static int cgroup_base(char *out, size_t len)
{
	const char *env = getenv("PERFSNAKE_CGROUP");
	char mnt[1024], own[2048];

	if (env && *env) {
		if (!strcmp(env, "none"))
			return -1;
		snprintf(out, len, "%s", env);
		return mkdir(out, 0755) && errno != EEXIST ? -1 : 0;
	}
	if (cgroup2_mount(mnt, sizeof(mnt)))
		return -1;
	snprintf(out, len, "%s/perfsnake", mnt);
	if (!mkdir(out, 0755) || errno == EEXIST) {
		if (!access(out, W_OK))
			return 0;
	}
	if (own_cgroup(own, sizeof(own)) || !strcmp(own, "/"))
		return -1;
	snprintf(out, len, "%s%s/perfsnake", mnt, own);
	return mkdir(out, 0755) && errno != EEXIST ? -1 : 0;
}

/* The run's cgroup, named after its directory so that the next attempt of
 * the same run finds (and clears) what an interrupted one left. Returns an
 * open descriptor of it for clone3, or -1 (then: subreaper only). */
/* Best effort, once per launcher: the memory controller for the run
 * cgroups (their memory.peak), where the parent offers it. */
static void enable_memory(const char *base)
{
	static int tried;
	char path[3700], buf[512];

	if (tried)
		return;
	tried = 1;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", base);
	if (read_small(path, buf, sizeof(buf)) > 0 && strstr(buf, "memory"))
		write_file(base, "cgroup.subtree_control", "+memory");
}

static int setup_cgroup(const char *dir)
{
	char base[3584], real[4096];
	int fd;

	if (cgroup_base(base, sizeof(base)) || !realpath(dir, real))
		return -1;
	enable_memory(base);
	snprintf(cg_path, sizeof(cg_path), "%s/run-%016llx", base,
		 (unsigned long long)fnv1a(real));
	if (!access(cg_path, F_OK))
		cg_destroy(cg_path);
	if (mkdir(cg_path, 0755))
		return -1;
	fd = open(cg_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rmdir(cg_path);
	return fd;
}

struct clone_args_v2 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
		stack_size, tls, set_tid, set_tid_size, cgroup;
};

/* fork(), straight into the run's cgroup when there is one. */
static pid_t fork_contained(int cgfd)
{
	struct clone_args_v2 args;
	long r;

	if (cgfd < 0)
		return fork();
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cgfd;
	r = syscall(SYS_clone3, &args, sizeof(args));
	if (r >= 0 || (errno != ENOSYS && errno != EINVAL && errno != E2BIG &&
		       errno != EOPNOTSUPP && errno != EPERM && errno != EACCES))
		return (pid_t)r;
	/* clone3 or the cgroup refused: plain fork, subreaper containment. */
	use_cgroup = 0;
	return fork();
}

/* The sentinel and the guardian are psrun's, not the run's. */
static int psrun_own(pid_t pid)
{
	return pid == sentinel_pid || pid == guardian_pid;
}

static int kill_child_of_me(pid_t pid, const struct proc_info *pi, void *arg)
{
	(void)arg;
	if (pi->ppid != getpid() || psrun_own(pid))
		return 0;
	kill(pid, SIGKILL);
	return 1;
}

/* SIGKILL psrun's children but its own two; returns how many. The kernel's
 * list of children is cheap; without it, every process is looked at. */
static int kill_children(void)
{
	char path[64];
	FILE *f;
	int pid, n = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	f = fopen(path, "re");
	if (!f)
		return each_process(kill_child_of_me, NULL);
	while (fscanf(f, "%d", &pid) == 1) {
		if (!psrun_own(pid) && !kill(pid, SIGKILL))
			n++;
	}
	fclose(f);
	return n;
}

/* Without a cgroup: psrun is a subreaper, so every orphaned descendant is
 * its child; kill children until none is left (a killed child's own
 * children become psrun's in turn). Returns how many were killed. */
static int kill_descendants(void)
{
	double deadline = now_mono() + KILL_WAIT_S;
	int killed = 0, n;

	do {
		n = kill_children();
		/* The kernel's list may miss a child being reparented right
		 * then: an empty answer is checked against every process. */
		if (!n)
			n = each_process(kill_child_of_me, NULL);
		killed += n;
		reap_all();
		if (n)
			nap_ms(1);
	} while ((n || waitpid(-1, NULL, WNOHANG) > 0) && now_mono() < deadline);
	reap_all();
	return killed;
}

/* Ends every process of the run but psrun; returns how many were left. */
static int end_contained(void)
{
	int left;

	if (use_cgroup) {
		left = cg_count(cg_path);
		cg_destroy(cg_path); /* reaps the orphans reparented to psrun too */
		return left < 0 ? 0 : left;
	}
	return kill_descendants();
}

/* ---- what an interrupted attempt left ------------------------------------ */

struct dir_ref {
	const char *dir; /* resolved run directory */
	size_t len;
};

/* Processes working in the run directory (command.sh starts there, and
 * descendants inherit it) belong to the run. */
static int kill_in_dir(pid_t pid, const struct proc_info *pi, void *arg)
{
	struct dir_ref *ref = arg;
	char link[64], cwd[4096];
	ssize_t n;

	(void)pi;
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	n = readlink(link, cwd, sizeof(cwd) - 1);
	if (n < (ssize_t)ref->len)
		return 0;
	cwd[n] = 0;
	if (strncmp(cwd, ref->dir, ref->len) ||
	    (cwd[ref->len] && cwd[ref->len] != '/'))
		return 0;
	kill(pid, SIGKILL);
	return 1;
}

/* An interrupted attempt (its launcher killed outright) left the state file:
 * what is left of it goes before this attempt starts. The run's cgroup is
 * cleared by setup_cgroup; without one, processes still working in the run
 * directory are killed. */
static void sweep_dir(const char *dir)
{
	char real[4096];
	struct dir_ref ref;
	double deadline = now_mono() + KILL_WAIT_S;

	if (!realpath(dir, real) || !strcmp(real, "/"))
		return;
	ref.dir = real;
	ref.len = strlen(real);
	while (each_process(kill_in_dir, &ref) && now_mono() < deadline)
		nap_ms(2);
}

static void sweep_previous(const char *dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	if (!access(path, F_OK))
		sweep_dir(dir);
}

/* ---- the guardian --------------------------------------------------------- */

/* Closes every descriptor but `a` and `b` (-1: none): a few close_range
 * calls instead of a thousand close calls while the benchmark starts. */
static void close_all_but(int a, int b)
{
	int keep[2], lo = 0, i, fd;

	keep[0] = a < b ? a : b;
	keep[1] = a < b ? b : a;
#ifdef SYS_close_range
	for (i = 0; i < 2; i++) {
		if (keep[i] < lo)
			continue;
		if (keep[i] > lo &&
		    syscall(SYS_close_range, lo, keep[i] - 1, 0))
			goto by_hand;
		lo = keep[i] + 1;
	}
	if (!syscall(SYS_close_range, lo, ~0U, 0))
		return;
by_hand:
#endif
	(void)i;
	(void)lo;
	for (fd = 0; fd < 1024; fd++)
		if (fd != a && fd != b)
			close(fd);
}

/* Forked before the timed interval, in a session of its own (so a kill of
 * the workflow's session or process group spares it), holding the host lock
 * too: it blocks in read() until psrun writes "done" (then exits at once) or
 * dies without (end of file: it clears the run, then exits, releasing the
 * lock). Costs the run nothing but one sleeping process. */
static void start_guardian(const char *dir, int lock_fd)
{
	int fds[2];
	char c;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC))
		return;
	guardian_pid = fork();
	if (guardian_pid != 0) {
		close(fds[0]);
		if (guardian_pid < 0)
			close(fds[1]);
		else
			guardian_fd = fds[1];
		return;
	}
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	close_all_but(fds[0], lock_fd);
	do
		n = read(fds[0], &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	if (use_cgroup)
		cg_destroy(cg_path);
	sweep_dir(dir);
	_exit(0);
}

/* Tells the guardian the run ended cleanly ("d"): it exits. */
static void guardian_let_go(void)
{
	struct timespec zero = {0, 0};
	sigset_t pipe_set, old;

	if (guardian_fd >= 0) {
		/* A guardian killed meanwhile must not take psrun with SIGPIPE
		 * (ignoring it would pass SIG_IGN on to benchmarks). */
		sigemptyset(&pipe_set);
		sigaddset(&pipe_set, SIGPIPE);
		sigprocmask(SIG_BLOCK, &pipe_set, &old);
		if (write(guardian_fd, "d", 1) != 1)
			sigtimedwait(&pipe_set, NULL, &zero);
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(guardian_fd);
		guardian_fd = -1;
	}
}

/* Lets the guardian go and waits until it is gone. */
static void guardian_release(void)
{
	guardian_let_go();
	if (guardian_pid > 0)
		waitpid(guardian_pid, NULL, 0);
}

/* --serve's guardian, started once: a socket instead of a pipe. psrun
 * sends "r" RUN_DIR "\0" CGROUP "\0" (with the run's lock descriptor) as a
 * run starts, "i" once nothing of it is left, "d" when psrun is done. End of
 * file in a run (psrun killed outright) clears that run, as the single
 * form's guardian does, then it exits, releasing the lock. It answers "i"
 * with "k" once it has closed the lock: the caller, told the run is
 * recorded, takes the lock again for its next run and must find it free. */
/* A NUL-terminated field into `out`, or "" when it does not fit. */
static void copy_field(char *out, size_t size, const char *field)
{
	size_t len = strnlen(field, size);

	if (len >= size)
		len = 0;
	memcpy(out, field, len);
	out[len] = 0;
}

/* One message from a SOCK_SEQPACKET socket into buf (NUL-terminated), the
 * descriptor attached to it into *fd (else -1). Returns its length, 0 at
 * end of file, -1 on an error or a message or descriptor cut short. */
static ssize_t recv_message(int sock, char *buf, size_t len, int *fd)
{
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, len - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	buf[n] = 0;
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}

static void guardian_serve_loop(int sock)
{
	char buf[8400], dir[4096] = "", cg[4096] = "";
	int lock = -1, fd;

	for (;;) {
		ssize_t n = recv_message(sock, buf, sizeof(buf), &fd);

		if (n <= 0)
			break;
		if (buf[0] == 'd')
			_exit(0);
		if (lock >= 0)
			close(lock);
		lock = -1;
		dir[0] = cg[0] = 0;
		if (buf[0] != 'r') {
			/* "i": idle between two runs; the lock is no longer held here */
			if (fd >= 0)
				close(fd);
			if (send(sock, "k", 1, MSG_NOSIGNAL) != 1)
				_exit(0);
			continue;
		}
		lock = fd;
		copy_field(dir, sizeof(dir), buf + 1);
		copy_field(cg, sizeof(cg), buf + 2 + strlen(buf + 1));
	}
	if (cg[0])
		cg_destroy(cg);
	if (dir[0])
		sweep_dir(dir);
	_exit(0);
}

static void start_guardian_serving(void)
{
	int fds[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds))
		die("socketpair");
	guardian_pid = fork();
	if (guardian_pid < 0)
		die("fork");
	if (guardian_pid == 0) {
		setsid();
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		close_all_but(fds[1], -1);
		guardian_serve_loop(fds[1]);
	}
	close(fds[1]);
	guardian_fd = fds[0];
}

/* Tells the serving guardian which run to clear should psrun die, with the
 * run's lock (NULL dir: the run is over, nothing of it is left). */
static void guardian_tell(const char *dir, int lock_fd)
{
	char buf[8400], control[CMSG_SPACE(sizeof(int))];
	size_t len = 1;
	struct iovec iov = { buf, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (guardian_fd < 0)
		return;
	buf[0] = dir ? 'r' : 'i';
	if (dir)
		len += (size_t)snprintf(buf + 1, sizeof(buf) - 1, "%s%c%s", dir, 0,
					use_cgroup ? cg_path : "") + 1;
	iov.iov_len = len;
	if (dir && lock_fd >= 0) {
		memset(control, 0, sizeof(control));
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &lock_fd, sizeof(int));
	}
	/* A guardian gone meanwhile: MSG_NOSIGNAL, no SIGPIPE for psrun. */
	if (sendmsg(guardian_fd, &msg, MSG_NOSIGNAL) < 0) {
		close(guardian_fd);
		guardian_fd = -1;
	}
}

/* The serving guardian's "k" for the last "i": it holds the run's lock no more. */
static void guardian_idle(void)
{
	char c;

	if (guardian_fd >= 0 && recv(guardian_fd, &c, 1, 0) != 1) {
		close(guardian_fd);
		guardian_fd = -1;
	}
}

/* --serve: the state file of the run before, kept open, and where it is
 * (see write_state). */
static int state_fd = -1;
static char state_at[4200];

/* Marks the run as started (for the next attempt's sweep) and says how it is
 * contained (read by the daemon hook). Serving, the file of the run before
 * is moved here and rewritten in place instead of being deleted and created
 * again: on an ext4 without a journal each inode freed in the last minute
 * is checked, one by one, by every file creation after it. Only our own
 * file is reused (the descriptor we created it with names the inode found
 * here); anything else a benchmark put in its place goes. */
static void write_state(const char *dir)
{
	char path[4200], text[4400];
	struct stat ours, here;
	int fd, len;

	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	len = snprintf(text, sizeof(text), "pid %d\ncontainment %s\nguardian %d\n",
		       (int)getpid(), containment, (int)guardian_pid);
	if (len < 0 || len >= (int)sizeof(text))
		return;
	if (state_fd >= 0) {
		int moved = !rename(state_at, path);

		if (moved && !fstat(state_fd, &ours) && !lstat(path, &here) &&
		    ours.st_ino == here.st_ino && ours.st_dev == here.st_dev &&
		    here.st_nlink == 1 &&
		    pwrite(state_fd, text, (size_t)len, 0) == len &&
		    !ftruncate(state_fd, len)) {
			snprintf(state_at, sizeof(state_at), "%s", path);
			return;
		}
		if (!moved) /* another file system: not left behind */
			unlink(state_at);
		close(state_fd);
		state_fd = -1;
		state_at[0] = 0;
	}
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return;
	if (write(fd, text, (size_t)len) != len)
		fprintf(stderr, "psrun: %s: %s\n", path, strerror(errno));
	if (serving) {
		state_fd = fd;
		snprintf(state_at, sizeof(state_at), "%s", path);
	} else {
		close(fd);
	}
}

/* The run is over: its state file goes, or, after a recorded run of a
 * serving psrun, waits to be moved into the next run's directory (a
 * finished run's directory holding it meanwhile says nothing: its
 * status.json is read first). */
static void clear_state(const char *dir, int recorded)
{
	char path[4200];

	if (serving && recorded && state_fd >= 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	unlink(path);
	if (state_fd >= 0) {
		close(state_fd);
		state_fd = -1;
		state_at[0] = 0;
	}
}

/* A serving psrun ends: the state file kept for the next run goes. */
static void drop_kept_state(void)
{
	if (state_fd < 0)
		return;
	unlink(state_at);
	close(state_fd);
	state_fd = -1;
	state_at[0] = 0;
}

/* ---- the caller's process group ------------------------------------------- */

/* The sentinel's end-of-file once it has settled (see sentinel_settled). */
static int sentinel_ready = -1;

/* A child left in the caller's process group, so that a signal to that
 * group (Ctrl-C, kill -9 -PGID) still reaches the run although psrun moved
 * to a process group of its own: the sentinel dies, psrun sees it and aborts. */
static pid_t start_sentinel(void)
{
	pid_t ppid = getpid(), pid;
	sigset_t none;
	int fd, ready[2];

	if (pipe2(ready, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid != 0) {
		close(ready[1]);
		if (pid > 0)
			sentinel_ready = ready[0];
		else
			close(ready[0]);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != ppid)
		_exit(0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* It must not hold the caller's pipes or the lock; closing its end of
	 * `ready` tells psrun it is settled. */
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 0, ~0U, 0))
#endif
		for (fd = 0; fd < 1024; fd++)
			close(fd);
	for (;;)
		pause();
}

/* Waits until the sentinel has settled (end of file on `ready`): it must
 * not compete with the timed interval for a CPU. Called just before the
 * benchmark starts, so that the sentinel settles while psrun prepares the
 * run (a round trip through the scheduler less on every run). */
static void sentinel_settled(void)
{
	char c = 0;

	if (sentinel_ready < 0)
		return;
	while (read(sentinel_ready, &c, 1) < 0 && errno == EINTR)
		;
	close(sentinel_ready);
	sentinel_ready = -1;
}

/* ---- waiting -------------------------------------------------------------- */

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
static pid_t sentinel = -1;

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

/* The sentinel's death: the caller's process group was signalled. */
static int sentinel_signal(void)
{
	int st = sentinel_status;

	if (sentinel <= 0 || (st == -1 && waitpid(sentinel, &st, WNOHANG) != sentinel))
		return 0;
	sentinel = -1;
	sentinel_status = st;
	return WIFSIGNALED(st) ? WTERMSIG(st) : SIGHUP;
}

/* Wait for the child, but no longer than `limit` seconds (negative: forever).
 * Returns 1 when reaped, 0 on time-out, -signo when psrun was signalled or
 * its parent died (reported as SIGHUP). */
/* Set by stop_group: no signal or dead parent shortens the grace. */
static int stopping;

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
		/* Once stopping, only the grace period ends the wait: a second
		 * abort (the parent's death signal after the sentinel's word)
		 * must not cut the benchmark's clean-up short. */
		if (!stopping &&
		    (getppid() != parent || (watch_stdin && stdin_closed())))
			return -SIGHUP;
		sig = stopping ? 0 : sentinel_signal();
		if (sig)
			return -sig;
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
		if (!stopping && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP))
			return -sig;
	}
}

/* SIGTERM the whole process group (and, in a cgroup, every member), then
 * SIGKILL everything after `grace` seconds. */
static int stop_group(pid_t pid, double grace, int *wstatus, struct rusage *ru)
{
	char path[4200], line[64];
	FILE *f;
	int r;

	watch_stdin = 0; /* already stopping: give the grace period in full */
	stopping = 1;
	sentinel = -1;
	kill(-pid, SIGTERM);
	if (use_cgroup) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg_path);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			kill((pid_t)atoi(line), SIGTERM);
		if (f)
			fclose(f);
	}
	r = wait_child(pid, getppid(), grace, wstatus, ru);
	if (r != 1) {
		kill(-pid, SIGKILL);
		while (wait4(pid, wstatus, 0, ru) < 0 && errno == EINTR)
			;
	}
	return r;
}

/* ---- status.json ------------------------------------------------------------ */

/* A JSON string of a file name: quotes, backslashes and bytes outside
 * printable ASCII become '?', enough to tell which file it was. */
static void json_name(FILE *f, const char *name)
{
	fputc('"', f);
	for (; *name; name++)
		fputc(*name >= 0x20 && *name < 0x7f && *name != '"' &&
				      *name != '\\' ?
			      *name :
			      '?',
		      f);
	fputc('"', f);
}

/* Symbolic links in the run directory after the run: reported, so that a
 * reader knows the benchmark planted them (nothing follows them). */
static void list_links(FILE *f, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	int first = 1;

	fputs("[", f);
	while (d && (e = readdir(d))) {
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISLNK(st.st_mode))
			continue;
		if (!first)
			fputs(", ", f);
		json_name(f, e->d_name);
		first = 0;
	}
	if (d)
		closedir(d);
	fputs("]", f);
}

/* status.json is fsynced before its rename (see --no-fsync). */
static int status_fsync = 1;

static void write_status(const char *dir, const char *status, int exit_code,
			 int signo, const struct timespec *t0,
			 const struct timespec *t1, const struct timespec *w0,
			 const struct timespec *w1, const struct rusage *ru,
			 int leftovers, const struct machine_snap *m0,
			 const struct machine_snap *m1, const struct run_usage *usage)
{
	char tmp[4096], path[4096], copy[4096], start[96], end[96], job[32] = "";
	char node[256] = "";
	const char *slurm_job = getenv("SLURM_JOB_ID");
	const char *slurm_node = getenv("SLURMD_NODENAME");
	struct utsname host;
	FILE *f;
	int fd;

	/* Which machine measured: on a cluster, the compute node and job. */
	if (uname(&host))
		strcpy(host.nodename, "unknown");
	if (slurm_job && strspn(slurm_job, "0123456789") == strlen(slurm_job))
		snprintf(job, sizeof(job), "%s", slurm_job);
	/* The node's Slurm name, which need not be its host name (a fleet's
	 * hosts are node names); only characters that need no JSON escape. */
	if (slurm_node && strlen(slurm_node) < sizeof(node) &&
	    strspn(slurm_node, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				"0123456789._-") == strlen(slurm_node))
		snprintf(node, sizeof(node), "%s", slurm_node);

	/* A fresh, uniquely named file (O_EXCL): never a planted link. */
	snprintf(tmp, sizeof(tmp), "%s/.status.json.XXXXXX", dir);
	snprintf(path, sizeof(path), "%s/status.json", dir);
	iso_utc(w0, start, sizeof(start));
	iso_utc(w1, end, sizeof(end));
	fd = mkstemp(tmp);
	if (fd < 0 || fchmod(fd, 0644) || !(f = fdopen(fd, "w")))
		die(tmp);
	fprintf(f,
		"{\"status\": \"%s\", \"exit_code\": %d, \"signal\": %d, "
		"\"wall_s\": %.9f, \"start\": \"%s\", \"end\": \"%s\", "
		"\"start_epoch\": %.6f, \"end_epoch\": %.6f, "
		"\"utime_s\": %.6f, \"stime_s\": %.6f, \"maxrss_kb\": %ld, "
		"\"host\": \"%s\", \"slurm_job_id\": \"%s\", "
		"\"slurm_node\": \"%s\", "
		"\"containment\": ",
		status, exit_code, signo, ts_diff(t0, t1), start, end,
		ts_sec(w0), ts_sec(w1),
		ts_sec(&(struct timespec){ ru->ru_utime.tv_sec,
					   ru->ru_utime.tv_usec * 1000 }),
		ts_sec(&(struct timespec){ ru->ru_stime.tv_sec,
					   ru->ru_stime.tv_usec * 1000 }),
		ru->ru_maxrss, host.nodename, job, node);
	json_name(f, containment);
	fprintf(f, ", \"leftovers_killed\": %d, \"links\": ", leftovers);
	list_links(f, dir);
	fputs(", \"machine\": {\"before\": ", f);
	json_snap(f, m0);
	fputs(", \"after\": ", f);
	json_snap(f, m1);
	fputs("}, \"usage\": ", f);
	json_usage(f, usage);
	fputs("}\n", f);
	if (fflush(f) || (status_fsync && fsync(fileno(f))) || fclose(f))
		die(tmp);
	/* A second name for the record, in place before status.json is: a
	 * cluster job cancelled after the run ended has its output deleted by
	 * Snakemake, and the resume restores it from this one instead of
	 * measuring the run again. Best effort: without it (no hard links on
	 * this file system) the resume measures such a run again. */
	snprintf(copy, sizeof(copy), "%s/.status.final", dir);
	unlink(copy);
	if (link(tmp, copy))
		unlink(copy);
	if (rename(tmp, path))
		die(path);
}

/* How the last run recorded ended (status.json's "status"): a serving
 * psrun's reply, so its caller reads status.json only for a run that failed. */
static const char *last_status = "ok";

/* One run: what an interrupted attempt left goes, the benchmark runs in its
 * own cgroup (or under psrun as subreaper), status.json is written. Returns
 * 0 when the run was recorded, 128+N when aborted by signal N (nothing
 * recorded). `old`: the signal mask the benchmark gets. */
static int run_one(const char *dir, double timeout, double grace, int lock_fd,
		   char *const *argv, pid_t parent, const sigset_t *old)
{
	struct timespec t0, t1, w0, w1;
	struct rusage ru;
	struct machine_snap m0, m1;
	struct run_usage usage;
	int out, err, in, wstatus = 0, r, exit_code, signo = 0, cgfd, leftovers;
	const char *status = "ok";
	pid_t pid;

	use_cgroup = 0;
	stopping = 0;
	snprintf(containment, sizeof(containment), "subreaper");
	/* What an interrupted attempt of this run left behind goes first. */
	sweep_previous(dir);
	cgfd = setup_cgroup(dir);
	use_cgroup = cgfd >= 0;
	if (use_cgroup)
		snprintf(containment, sizeof(containment), "cgroup2:%s", cg_path);
	if (serving)
		guardian_tell(dir, lock_fd);
	else
		start_guardian(dir, lock_fd);
	write_state(dir);
	out = open_out(dir, "stdout.txt");
	err = open_out(dir, "stderr.txt");
	in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("/dev/null");
	memset(&ru, 0, sizeof(ru));
	sentinel_settled();

	machine_snap(&m0, !use_cgroup);
	clock_gettime(CLOCK_REALTIME, &w0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork_contained(cgfd);
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* Own process group, so a time-out can stop every descendant. */
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, old, NULL);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		dprintf(2, "psrun: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* also from the parent: no race with kill(-pid) */
	r = wait_child(pid, parent, timeout, &wstatus, &ru);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_REALTIME, &w1);
	close(in);
	close(out);
	close(err);
	if (!use_cgroup) /* clone3 refused the cgroup */
		snprintf(containment, sizeof(containment), "subreaper");

	if (r < 0) {
		/* Aborted from outside: stop the run and leave no status file.
		 * A dead workflow gets no long grace: nothing may outlive it. */
		stop_group(pid, r == -SIGTERM ? grace : (grace < 0.5 ? grace : 0.5),
			   &wstatus, &ru);
		end_contained();
		if (cgfd >= 0)
			close(cgfd);
		clear_state(dir, 0);
		guardian_release();
		fprintf(stderr, "psrun: aborted by signal %d\n", -r);
		return 128 - r;
	}
	if (r == 0) {
		stop_group(pid, grace, &wstatus, &ru);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		clock_gettime(CLOCK_REALTIME, &w1);
		status = "timeout";
	}
	machine_snap(&m1, !use_cgroup);
	read_usage(use_cgroup ? cg_path : NULL, &m0, &m1, &usage);
	/* Descendants left behind by the benchmark must not outlive the run. */
	kill(-pid, SIGKILL);
	leftovers = end_contained();
	if (cgfd >= 0)
		close(cgfd);
	/* Nothing of the run is left: the guardian may go (it exits while
	 * status.json is written; guardian_release then reaps it), or, serving,
	 * forget the run and its lock. */
	if (serving)
		guardian_tell(NULL, -1);
	else
		guardian_let_go();

	if (WIFSIGNALED(wstatus)) {
		signo = WTERMSIG(wstatus);
		exit_code = 128 + signo;
	} else {
		exit_code = WEXITSTATUS(wstatus);
	}
	if (r == 1)
		status = exit_code == 0 ? "ok" : "failed";
	write_status(dir, status, exit_code, signo, &t0, &t1, &w0, &w1, &ru,
		     leftovers, &m0, &m1, &usage);
	last_status = status;
	clear_state(dir, 1);
	if (serving)
		guardian_idle(); /* asked before status.json was written */
	else
		guardian_release();
	return 0;
}

#define MAX_ARGS 256

/* --serve: runs one request after another until end of file (0), an
 * aborted run (128+N) or a bad request (2). */
static int serve(double grace, pid_t parent, const sigset_t *old)
{
	static char buf[65536];
	char *fields[MAX_ARGS + 3], *end, *p;
	struct timespec zero = { 0, 0 };
	sigset_t stop;
	int rc;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	start_guardian_serving();
	for (;;) {
		int nf = 0, lock_fd;
		ssize_t n = recv_message(0, buf, sizeof(buf), &lock_fd);
		double timeout;

		if (n == 0) {
			drop_kept_state();
			guardian_release();
			return 0;
		}
		if (n < 0)
			die("--serve: a request on standard input");
		/* TIMEOUT \0 RUN_DIR \0 PROG \0 ARG \0 ...: NUL-separated fields. */
		for (p = buf, end = buf + n; p < end && nf < MAX_ARGS + 2; p += strlen(p) + 1)
			fields[nf++] = p;
		fields[nf] = NULL;
		if (nf < 3 || !fields[1][0]) {
			fprintf(stderr, "psrun: --serve: a request needs TIMEOUT, RUN_DIR and PROG\n");
			drop_kept_state();
			guardian_release();
			return 2;
		}
		timeout = strcmp(fields[0], "-") ? atof(fields[0]) : -1;
		/* The caller's process group was signalled between two runs (a
		 * time-out's stop_group stopped watching the sentinel: again). */
		sentinel = sentinel_pid;
		rc = sentinel_signal();
		if (rc) {
			drop_kept_state();
			guardian_release();
			fprintf(stderr, "psrun: aborted by signal %d\n", rc);
			return 128 + rc;
		}
		/* A SIGTERM meant for the run before (the daemon watcher's, sent
		 * as that run ended) must not abort this one. */
		while (sigtimedwait(&stop, NULL, &zero) > 0)
			;
		rc = run_one(fields[1], timeout, grace, lock_fd, &fields[2], parent, old);
		if (lock_fd >= 0)
			close(lock_fd);
		if (rc)
			return rc;
		if (send(0, last_status, strlen(last_status), MSG_NOSIGNAL) != (ssize_t)strlen(last_status)) {
			drop_kept_state();
			guardian_release();
			return 0; /* the caller is gone, after a recorded run */
		}
	}
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	double timeout = -1, grace = 5;
	sigset_t set, old;
	int i, lock_fd = -1;
	pid_t parent = getppid();

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = atof(argv[++i]);
		else if (!strcmp(argv[i], "--grace") && i + 1 < argc)
			grace = atof(argv[++i]);
		else if (!strcmp(argv[i], "--lock-fd") && i + 1 < argc)
			lock_fd = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--watch-stdin"))
			watch_stdin = 1;
		else if (!strcmp(argv[i], "--no-fsync"))
			status_fsync = 0;
		else if (!strcmp(argv[i], "--serve"))
			serving = 1;
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			break;
	}
	/* A negative grace would wait forever once stopping, deaf to every signal. */
	if (serving ? (dir || i < argc || lock_fd >= 0 || watch_stdin || timeout >= 0 || !(grace >= 0)) :
		      (!dir || i >= argc || !(grace >= 0))) {
		fprintf(stderr, "usage: psrun --dir RUN_DIR [--timeout SEC] "
				"[--grace SEC] [--watch-stdin] [--lock-fd FD] "
				"[--no-fsync] "
				"-- PROG [ARG...]\n"
				"       psrun --serve [--grace SEC] [--no-fsync] "
				"(runs from a SOCK_SEQPACKET socket on stdin)\n");
		return 2;
	}
	/* The lock stays with psrun, not with the benchmark. */
	if (lock_fd >= 0 && fcntl(lock_fd, F_SETFD, FD_CLOEXEC))
		die("--lock-fd");

	watched_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* A catchable death signal: the parent's death aborts the run cleanly. */
	prctl(PR_SET_PDEATHSIG, SIGHUP);
	if (getppid() != parent)
		return 128 + SIGHUP;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sentinel = sentinel_pid = start_sentinel();
	if (sentinel < 0)
		die("fork");
	/* Out of the caller's process group, but in its session: a session of
	 * its own would put the benchmark in a scheduler autogroup of its own,
	 * which on a loaded machine delays its first time slice (measured: the
	 * interval of /bin/true x2.6). */
	setpgid(0, 0);
	if (serving)
		return serve(grace, parent, &old);
	return run_one(dir, timeout, grace, lock_fd, &argv[i], parent, &old);
}
