/*
 * protocol_test: checks the harness's coordination with real processes.
 *
 * usage: protocol_test PARALLEL [KILL_CHILD]
 * Each child records (in shared memory) when it first ran the benchmark and
 * when its first timed interval began (initialize with n > 0). With all
 * children ready before any measures, the latest first-run must precede the
 * earliest timed interval. With KILL_CHILD given, that child kills itself
 * during its first timed interval, and benchmp must report a failure.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct slot {
	uint64_t first_run, first_timed;
	int index;
};

static struct slot *slots;
static int kill_child = -1;
static int my_index = -1;
static pid_t parent;

static void init(iter_t n, void *cookie)
{
	(void)cookie;
	if (getpid() == parent)
		return; /* the parent's single-process baseline is not a child */
	if (n == 0) {
		my_index = __atomic_fetch_add(&slots[0].index, 1, __ATOMIC_SEQ_CST);
		return;
	}
	if (!slots[my_index + 1].first_timed)
		slots[my_index + 1].first_timed = now_ns();
	if (my_index == kill_child)
		raise(SIGKILL);
}

static void bench(iter_t n, void *cookie)
{
	volatile uint64_t x = 0;

	(void)cookie;
	if (my_index >= 0 && !slots[my_index + 1].first_run)
		slots[my_index + 1].first_run = now_ns();
	while (n--)
		x += n;
}

int main(int argc, char **argv)
{
	int parallel = argc > 1 ? atoi(argv[1]) : 2;
	uint64_t last_first_run = 0, first_timed = UINT64_MAX;

	parent = getpid();
	if (argc > 2)
		kill_child = atoi(argv[2]);
	slots = mmap(NULL, sizeof(*slots) * 300, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return 2;
	if (benchmp(init, bench, NULL, 0, parallel, 20000, 3, NULL)) {
		printf("protocol: failure detected\n");
		return 1;
	}
	for (int c = 1; c <= parallel; c++) {
		if (slots[c].first_run > last_first_run)
			last_first_run = slots[c].first_run;
		if (slots[c].first_timed < first_timed)
			first_timed = slots[c].first_timed;
	}
	printf("protocol: children=%d all_started_before_timing=%s margin_us=%.1f\n", parallel,
	       last_first_run < first_timed ? "yes" : "no", ((double)first_timed - (double)last_first_run) / 1000.0);
	return last_first_run < first_timed ? 0 : 1;
}
