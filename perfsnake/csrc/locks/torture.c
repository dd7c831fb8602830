/*
 * torture: checks mutual exclusion and progress of whatever
 * pthread_mutex_lock is in effect (run it with LD_PRELOAD=libpslock-X.so).
 *
 * usage: torture THREADS ITERATIONS
 *
 * Phases, each with THREADS threads:
 *   1. counter: a non-atomic counter and an occupancy check in the critical
 *      section, on a statically and on a dynamically initialised mutex;
 *   2. mixed: lock and trylock on two mutexes taken in a fixed order;
 *   3. condvar: a bounded buffer with producers and consumers using
 *      pthread_cond_wait, signal and broadcast (glibc relocks the mutex
 *      internally there).
 * Prints "torture: ok <algorithm>" and exits 0, or names the failure and
 * exits 1. Progress is the caller's time limit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

static int nthreads;
static long iters;
/* Longest a trylock may keep failing; others finishing their iterations
 * release the lock long before that, even with 8 threads on a loaded machine. */
#define TRYLOCK_LIMIT_S 60

static pthread_mutex_t static_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dyn_mutex;
static pthread_mutex_t outer, inner;
static volatile long counter_static, counter_dyn, counter_nested;
/* Threads inside each mutex's critical section: must stay <= 1. */
static int in_static, in_dyn, in_nested, in_buf;
static int failed;

/* The first violation is the verdict: exit at once. Going on with a broken
 * lock can hang (a lost condition-variable wake-up), which a test would see
 * as a time-out instead of the failure it is. */
static void fail(const char *what)
{
	if (__atomic_exchange_n(&failed, 1, __ATOMIC_SEQ_CST) == 0) {
		fprintf(stderr, "torture: FAILED: %s\n", what);
		_exit(1);
	}
}

static void enter(int *inside)
{
	if (__atomic_add_fetch(inside, 1, __ATOMIC_SEQ_CST) != 1)
		fail("two threads inside one critical section");
}

static void leave(int *inside)
{
	__atomic_sub_fetch(inside, 1, __ATOMIC_SEQ_CST);
}

/* A critical section a few hundred cycles long: two threads that run at
 * once without exclusion meet inside it, even on a loaded machine where
 * they rarely run at the same moment. */
static void dwell(void)
{
	for (volatile int k = 0; k < 64; k++)
		;
}

static void *counter_worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&static_mutex);
		enter(&in_static);
		counter_static = counter_static + 1;
		dwell();
		leave(&in_static);
		pthread_mutex_unlock(&static_mutex);

		pthread_mutex_lock(&dyn_mutex);
		enter(&in_dyn);
		counter_dyn = counter_dyn + 1;
		leave(&in_dyn);
		pthread_mutex_unlock(&dyn_mutex);
	}
	return NULL;
}

static void *mixed_worker(void *arg)
{
	long id = (long)arg;

	for (long i = 0; i < iters; i++) {
		if ((i + id) % 3 == 0) {
			struct timespec since, now;

			clock_gettime(CLOCK_MONOTONIC, &since);
			while (pthread_mutex_trylock(&outer) != 0) {
				sched_yield();
				/* A lock never released (a broken unlock) would spin here forever. */
				clock_gettime(CLOCK_MONOTONIC, &now);
				if (now.tv_sec - since.tv_sec > TRYLOCK_LIMIT_S)
					fail("trylock failed for over a minute: the lock is never released");
			}
		} else {
			pthread_mutex_lock(&outer);
		}
		pthread_mutex_lock(&inner);
		enter(&in_nested);
		counter_nested = counter_nested + 1;
		leave(&in_nested);
		pthread_mutex_unlock(&inner);
		pthread_mutex_unlock(&outer);
	}
	return NULL;
}

#define SLOTS 4
static pthread_mutex_t buf_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buffer[SLOTS];
static int count, head, producers_left;
static long consumed_sum, consumed_items;

static void *producer(void *arg)
{
	long id = (long)arg;

	for (long i = 1; i <= iters; i++) {
		pthread_mutex_lock(&buf_mutex);
		while (count == SLOTS)
			pthread_cond_wait(&not_full, &buf_mutex);
		enter(&in_buf);
		buffer[(head + count) % SLOTS] = i + id * iters;
		count++;
		leave(&in_buf);
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&buf_mutex);
	}
	pthread_mutex_lock(&buf_mutex);
	producers_left--;
	pthread_cond_broadcast(&not_empty); /* consumers may be done */
	pthread_mutex_unlock(&buf_mutex);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&buf_mutex);
		while (count == 0 && producers_left > 0)
			pthread_cond_wait(&not_empty, &buf_mutex);
		if (count == 0) {
			pthread_mutex_unlock(&buf_mutex);
			return NULL;
		}
		enter(&in_buf);
		consumed_sum += buffer[head];
		head = (head + 1) % SLOTS;
		count--;
		consumed_items++;
		leave(&in_buf);
		pthread_cond_broadcast(&not_full);
		pthread_mutex_unlock(&buf_mutex);
	}
}

static void run(void *(*fn)(void *), int n, pthread_t *t)
{
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)i)) {
			fail("pthread_create");
			exit(1);
		}
}

static void join(int n, pthread_t *t)
{
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	const char *(*algorithm)(void);
	pthread_t t[64];
	long expected_sum = 0;
	int half;

	if (argc != 3 || (nthreads = atoi(argv[1])) < 2 || nthreads > 64 || (iters = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: torture THREADS(2-64) ITERATIONS\n");
		return 2;
	}
	algorithm = (const char *(*)(void))dlsym(RTLD_DEFAULT, "pslock_algorithm");
	pthread_mutex_init(&dyn_mutex, NULL);
	pthread_mutex_init(&outer, NULL);
	pthread_mutex_init(&inner, NULL);

	run(counter_worker, nthreads, t);
	join(nthreads, t);
	if (counter_static != nthreads * iters || counter_dyn != nthreads * iters)
		fail("lost updates on the counters");
	if (failed) /* a broken lock would hang the later phases */
		return 1;

	run(mixed_worker, nthreads, t);
	join(nthreads, t);
	if (counter_nested != nthreads * iters)
		fail("lost updates with lock/trylock");
	if (failed)
		return 1;

	half = nthreads / 2;
	producers_left = half;
	run(producer, half, t);
	for (int i = half; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, consumer, NULL))
			fail("pthread_create");
	join(nthreads, t);
	for (long id = 0; id < half; id++)
		expected_sum += iters * (iters + 1) / 2 + id * iters * iters;
	if (consumed_items != half * iters || consumed_sum != expected_sum)
		fail("condition-variable buffer lost or duplicated items");

	pthread_mutex_destroy(&dyn_mutex);
	pthread_mutex_destroy(&outer);
	pthread_mutex_destroy(&inner);
	if (failed)
		return 1;
	printf("torture: ok %s threads=%d iterations=%ld\n", algorithm ? algorithm() : "pthread", nthreads, iters);
	return 0;
}
