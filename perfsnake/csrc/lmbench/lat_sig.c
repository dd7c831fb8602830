/*
 * lat_sig: signal costs (lmbench's lat_sig).
 *   install  sigaction() of a handler for SIGUSR1
 *   catch    kill(getpid(), SIGUSR1) delivered to a handler (send + delivery
 *            + handler + sigreturn)
 *   catch_lmbench  lmbench's figure: catch minus the cost of kill(getpid(), 0)
 *            (sending without delivering), measured just before
 *   prot     a write to a read-only page: SIGSEGV to a handler that makes the
 *            page writable, the loop then protects it again, so this is the
 *            fault and its delivery plus two mprotect() calls
 *
 * usage: lat_sig [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] install|catch|prot
 * Prints "lat_sig.<op> <latency> us".
 */
#define _GNU_SOURCE
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t caught;
static char *page;
static long pagesize;

static void on_usr1(int sig)
{
	(void)sig;
	caught++;
}

static void on_segv(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)ctx;
	/* Only our page: anything else is a real crash, let it happen. */
	if ((char *)info->si_addr < page || (char *)info->si_addr >= page + pagesize ||
	    mprotect(page, (size_t)pagesize, PROT_READ | PROT_WRITE))
		abort();
	caught++;
}

static void install(iter_t n, void *cookie)
{
	struct sigaction sa, old;

	(void)cookie;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	while (n--)
		sigaction(SIGUSR1, &sa, &old);
}

static void catch(iter_t n, void *cookie)
{
	pid_t me = getpid();

	(void)cookie;
	while (n--)
		kill(me, SIGUSR1); /* delivered before kill() returns: it is unblocked */
}

static void send_only(iter_t n, void *cookie)
{
	pid_t me = getpid();

	(void)cookie;
	while (n--)
		kill(me, 0); /* checks and "sends" signal 0: nothing is delivered */
}

static void prot(iter_t n, void *cookie)
{
	(void)cookie;
	while (n--) {
		if (mprotect(page, (size_t)pagesize, PROT_READ))
			abort();
		*(volatile char *)page = 1; /* faults; the handler unprotects */
	}
}

/* Per process: the handler and (for prot) a private page. */
static void setup(iter_t n, void *cookie)
{
	struct sigaction sa;

	(void)cookie;
	if (n != 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	if (!page) {
		pagesize = sysconf(_SC_PAGESIZE);
		page = mmap(NULL, (size_t)pagesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			abort();
		page[0] = 0;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
	}
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;
	benchmp_f f;
	char name[64];
	double send_med = -1, send_min = 0;

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0)
		goto usage;
	if (!strcmp(argv[first], "install"))
		f = install;
	else if (!strcmp(argv[first], "catch") || !strcmp(argv[first], "catch_lmbench"))
		f = catch;
	else if (!strcmp(argv[first], "prot"))
		f = prot;
	else
		goto usage;
	if (!strcmp(argv[first], "catch_lmbench")) {
		if (benchmp(setup, send_only, NULL, 0, parallel, warmup, reps, NULL))
			return 1;
		send_med = (double)gettime() / (double)get_n();
		send_min = (double)gettime_min() / (double)get_n_min();
	}
	if (benchmp(setup, f, NULL, 0, parallel, warmup, reps, NULL))
		return 1;
	if (f != install && caught == 0) { /* the handler must really have run */
		fprintf(stderr, "lat_sig: no signal was caught\n");
		return 1;
	}
	snprintf(name, sizeof(name), "lat_sig.%s", argv[first]);
	if (send_med >= 0) {
		double med = (double)gettime() / (double)get_n() - send_med;
		double min = (double)gettime_min() / (double)get_n_min() - send_min;
		result_line(name, (med > 0 ? med : 0) / 1000.0, "us");
		strncat(name, ".min", sizeof(name) - strlen(name) - 1);
		result_line(name, (min > 0 ? min : 0) / 1000.0, "us");
		harness_note();
		return 0;
	}
	micro(name, get_n());
	return 0;
usage:
	fprintf(stderr, "usage: lat_sig [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] install|catch|catch_lmbench|prot\n");
	return 2;
}
