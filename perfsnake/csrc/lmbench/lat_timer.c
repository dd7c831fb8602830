/*
 * lat_timer: sleep-timer accuracy (lmbench's lat_usleep): how long a sleep
 * of INTERVAL_US really lasts with usleep(), nanosleep(), select() or
 * pselect() (no descriptors, just the timeout), or, for itimer, the period
 * of an ITIMER_REAL timer whose SIGALRM handler re-arms it (lmbench's
 * itimer: each period is the interval plus the signal's delivery).
 *
 * usage: lat_timer [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] usleep|nanosleep|select|pselect|itimer [INTERVAL_US]
 * Prints "lat_timer.<op> <oversleep> us": the median over intervals of the
 * mean actual - requested duration (>= 0: a sleep never ends early), then
 * "lat_timer.<op>.min" and "lat_timer.<op>.actual <duration> us".
 */
#define _GNU_SOURCE
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct state {
	long us;
};

static void do_usleep(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--)
		usleep((useconds_t)s->us);
}

static void do_nanosleep(iter_t n, void *cookie)
{
	struct state *s = cookie;
	struct timespec req = { s->us / 1000000, (s->us % 1000000) * 1000 };

	while (n--)
		nanosleep(&req, NULL);
}

static void do_select(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		struct timeval tv = { s->us / 1000000, s->us % 1000000 }; /* select may modify it */
		select(0, NULL, NULL, NULL, &tv);
	}
}

static void do_pselect(iter_t n, void *cookie)
{
	struct state *s = cookie;

	while (n--) {
		struct timespec ts = { s->us / 1000000, (s->us % 1000000) * 1000 };
		pselect(0, NULL, NULL, NULL, &ts, NULL);
	}
}

/* itimer: SIGALRM is blocked but while waiting for it, so the count and
 * the re-arming happen in the handler and no signal slips in between the
 * test and the wait. */
static volatile sig_atomic_t alarms;
static struct itimerval period;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
	setitimer(ITIMER_REAL, &period, NULL); /* re-armed from now, as lmbench's handler does */
}

static void arm_itimer(iter_t n, void *cookie)
{
	struct state *s = cookie;
	struct sigaction sa;
	sigset_t block;

	if (n != 0)
		return;
	period.it_interval.tv_sec = period.it_value.tv_sec = s->us / 1000000;
	period.it_interval.tv_usec = period.it_value.tv_usec = s->us % 1000000;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, NULL);
}

static void do_itimer(iter_t n, void *cookie)
{
	static const struct itimerval off;
	sigset_t waiting;

	(void)cookie;
	sigprocmask(SIG_SETMASK, NULL, &waiting);
	sigdelset(&waiting, SIGALRM);
	alarms = 0;
	setitimer(ITIMER_REAL, &period, NULL);
	while ((iter_t)alarms < n)
		sigsuspend(&waiting);
	setitimer(ITIMER_REAL, &off, NULL);
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	struct state s = { 1000 };
	benchmp_f f, init = NULL;
	double n, req;
	char name[64];

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 2)
		goto usage;
	if (!strcmp(argv[first], "usleep"))
		f = do_usleep;
	else if (!strcmp(argv[first], "nanosleep"))
		f = do_nanosleep;
	else if (!strcmp(argv[first], "select"))
		f = do_select;
	else if (!strcmp(argv[first], "pselect"))
		f = do_pselect;
	else if (!strcmp(argv[first], "itimer")) {
		f = do_itimer;
		init = arm_itimer;
	} else
		goto usage;
	if (first + 1 < argc)
		s.us = atol(argv[first + 1]);
	if (s.us < 1 || s.us > 10000000)
		goto usage;
	if (benchmp(init, f, NULL, 0, parallel, warmup, reps, &s))
		return 1;
	n = (double)get_n() * 1000.0; /* ns -> us per sleep */
	req = (double)s.us;
	snprintf(name, sizeof(name), "lat_timer.%s", argv[first]);
	result_line(name, (double)gettime() / n - req, "us");
	snprintf(name, sizeof(name), "lat_timer.%s.min", argv[first]);
	result_line(name, (double)gettime_min() / ((double)get_n_min() * 1000.0) - req, "us");
	snprintf(name, sizeof(name), "lat_timer.%s.actual", argv[first]);
	result_line(name, (double)gettime() / n, "us");
	harness_note();
	return 0;
usage:
	fprintf(stderr, "usage: lat_timer [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] usleep|nanosleep|select|pselect|itimer [INTERVAL_US, 1..10000000, default 1000]\n");
	return 2;
}
