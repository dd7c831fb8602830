/*
 * pslock: lock algorithms interposed on pthread_mutex_lock (LD_PRELOAD).
 *
 * One shared object per algorithm, chosen at build time with
 * -DPSLOCK_ALGO=<n> (see ALGO_* below): cas (test-and-set), ttas, ticket,
 * mcs, clh, hemlock, cna and hmcs (the last two NUMA-aware).
 *
 * Design. glibc's condition variables release and re-acquire the mutex
 * internally (__pthread_mutex_unlock_usercnt, __pthread_mutex_cond_lock),
 * through the mutex's own lock word, without calling any interposable
 * symbol. A lock that kept its own notion of "held" would therefore be
 * broken by pthread_cond_wait. So mutual exclusion stays with glibc's word,
 * used exactly as glibc uses it (0 free, 1 held, 2 held with sleepers; the
 * owner's TID in __owner; __nusers counted), and the chosen algorithm is a
 * front end that decides which single waiter may take the word next:
 *
 *   lock:   acquire the algorithm's queue/ticket/flag (the front end),
 *           take glibc's word, release the front end.
 *   unlock: glibc's own pthread_mutex_unlock (not interposed).
 *
 * Waiters spin on the algorithm's state (queue nodes, tickets), at most one
 * thread at a time contends for the word, and hand-over order is the
 * algorithm's. trylock, timedlock and unlock are glibc's and stay correct
 * since they operate on the same word. Per-mutex front-end state lives in
 * the mutex's __list field, which glibc uses only for robust mutexes;
 * mutexes of any other kind (recursive, error-checking, robust, PI,
 * process-shared) are passed to glibc unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ALGO_CAS 1
#define ALGO_TTAS 2
#define ALGO_TICKET 3
#define ALGO_MCS 4
#define ALGO_CLH 5
#define ALGO_HEMLOCK 6
#define ALGO_CNA 7
#define ALGO_HMCS 8

#ifndef PSLOCK_ALGO
#error "build with -DPSLOCK_ALGO=<1..8>"
#endif

/* glibc's pthread_mutex_t on Linux (nptl/bits/struct_mutex.h). */
struct gmutex {
	int lock;
	unsigned int count;
	int owner;
	unsigned int nusers;
	int kind;
	short spins;
	short elision;
	void *state; /* __list.__prev: our front end */
	void *state2; /* __list.__next */
};
_Static_assert(sizeof(struct gmutex) == sizeof(pthread_mutex_t),
	       "unexpected pthread_mutex_t layout");

/* Kinds handled here: PTHREAD_MUTEX_TIMED_NP (default) and ADAPTIVE_NP. */
#define HANDLED(m) ((m)->kind == 0 || (m)->kind == 3)

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define CAS(p, e, v)                                                        \
	__atomic_compare_exchange_n((p), (e), (v), 0, __ATOMIC_ACQ_REL, \
				    __ATOMIC_ACQUIRE)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Spin politely: on an oversubscribed machine the thread we wait for may
 * be descheduled, so yield the CPU now and then. */
static inline void spin_wait(unsigned *n)
{
	if ((++*n & 63) == 0)
		sched_yield();
	else
		cpu_relax();
}

static __thread pid_t my_tid;

static inline pid_t tid(void)
{
	if (!my_tid)
		my_tid = (pid_t)syscall(SYS_gettid);
	return my_tid;
}

/* ---- glibc's lock word ---------------------------------------------------- */

static void futex_wait(int *addr, int val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/* Take the word as glibc's lll_lock does (sleepers mark it 2), then fill in
 * the owner fields exactly as pthread_mutex_lock would. */
static void word_lock(struct gmutex *m)
{
	unsigned n = 0;
	int expected;

	for (int i = 0; i < 100; i++) {
		expected = 0;
		if (LOAD(&m->lock) == 0 && CAS(&m->lock, &expected, 1))
			goto owned;
		spin_wait(&n);
	}
	while (XCHG(&m->lock, 2) != 0)
		futex_wait(&m->lock, 2);
owned:
	m->owner = tid();
	m->nusers++;
}

/* ---- NUMA topology (for cna and hmcs) ---------------------------------------- */

#define MAX_NODES 64
#define MAX_CPUS 4096
static short cpu_node[MAX_CPUS];
static int nr_nodes = 1;

/* open/read, not stdio: setup() runs inside the first pthread_mutex_init or
 * lock, which may be an allocator's (jemalloc initialising itself), and
 * fopen's malloc would re-enter that allocator and deadlock on its lock. */
static void read_topology(void)
{
	char path[96], buf[4096];
	for (int node = 0; node < MAX_NODES; node++) {
		ssize_t len;
		int fd;
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		char *p = buf;
		while (*p && *p != '\n') {
			long lo = strtol(p, &p, 10), hi = lo;
			if (*p == '-')
				hi = strtol(p + 1, &p, 10);
			for (long c = lo; c <= hi && c < MAX_CPUS; c++)
				if (c >= 0)
					cpu_node[c] = (short)node;
			if (*p == ',')
				p++;
			else
				break;
		}
		if (node + 1 > nr_nodes)
			nr_nodes = node + 1;
	}
}

static inline int current_node(void)
{
	int cpu = sched_getcpu();
	return (cpu >= 0 && cpu < MAX_CPUS) ? cpu_node[cpu] : 0;
}

/* ---- front ends ------------------------------------------------------------ */

#if PSLOCK_ALGO == ALGO_CAS
static const char algo_name[] = "cas";
/* No front end: every waiter competes for the word with test-and-set. */
static void algo_lock(struct gmutex *m)
{
	unsigned n = 0;
	int expected = 0;

	while (!CAS(&m->lock, &expected, 1)) {
		expected = 0;
		if (LOAD(&m->lock) == 2) { /* sleepers present: queue like glibc */
			word_lock(m);
			return;
		}
		spin_wait(&n);
	}
	m->owner = tid();
	m->nusers++;
}

#elif PSLOCK_ALGO == ALGO_TTAS
static const char algo_name[] = "ttas";
/* Test, then test-and-set: spin on a plain read, CAS only when it is free. */
static void algo_lock(struct gmutex *m)
{
	unsigned n = 0;
	int expected;

	for (;;) {
		while (LOAD(&m->lock) == 1)
			spin_wait(&n);
		if (LOAD(&m->lock) == 2) {
			word_lock(m);
			return;
		}
		expected = 0;
		if (CAS(&m->lock, &expected, 1))
			break;
	}
	m->owner = tid();
	m->nusers++;
}

#elif PSLOCK_ALGO == ALGO_TICKET
static const char algo_name[] = "ticket";
struct ticket {
	uint32_t next, serving;
};
_Static_assert(sizeof(struct ticket) <= sizeof(void *), "ticket state too big");
static void algo_lock(struct gmutex *m)
{
	struct ticket *t = (struct ticket *)&m->state;
	uint32_t mine = __atomic_fetch_add(&t->next, 1, __ATOMIC_ACQ_REL);
	unsigned n = 0;

	while (LOAD(&t->serving) != mine)
		spin_wait(&n);
	word_lock(m);
	STORE(&t->serving, mine + 1);
}

#elif PSLOCK_ALGO == ALGO_MCS || PSLOCK_ALGO == ALGO_HMCS
struct qnode {
	struct qnode *next;
	uint64_t status;
};

static void mcs_acquire(struct qnode **tail, struct qnode *me)
{
	struct qnode *pred;
	unsigned n = 0;

	me->next = NULL;
	STORE(&me->status, 1);
	pred = XCHG(tail, me);
	if (pred) {
		STORE(&pred->next, me);
		while (LOAD(&me->status))
			spin_wait(&n);
	}
}

static void mcs_release(struct qnode **tail, struct qnode *me)
{
	struct qnode *succ = LOAD(&me->next), *expected = me;
	unsigned n = 0;

	if (!succ) {
		if (CAS(tail, &expected, NULL))
			return;
		while (!(succ = LOAD(&me->next)))
			spin_wait(&n);
	}
	STORE(&succ->status, 0);
}

#if PSLOCK_ALGO == ALGO_MCS
static const char algo_name[] = "mcs";
static void algo_lock(struct gmutex *m)
{
	struct qnode me; /* the front end is released before we return */

	mcs_acquire((struct qnode **)&m->state, &me);
	word_lock(m);
	mcs_release((struct qnode **)&m->state, &me);
}
#else
static const char algo_name[] = "hmcs";
/* Two-level HMCS: an MCS lock per NUMA node in front of a global MCS lock.
 * The global lock is passed within a node up to THRESHOLD times in a row. */
#define WAIT UINT64_MAX
#define ACQUIRE_PARENT (UINT64_MAX - 1)
#define THRESHOLD 64
struct leaf {
	struct qnode *tail;
	struct qnode gnode; /* this node's place in the global queue */
	char pad[64 - 2 * sizeof(void *) - sizeof(uint64_t)];
};
struct hmcs {
	struct qnode *global;
	char pad[56];
	struct leaf leaves[];
};

static size_t hmcs_size(void)
{
	return sizeof(struct hmcs) + (size_t)nr_nodes * sizeof(struct leaf);
}

static struct hmcs *hmcs_of(struct gmutex *m)
{
	struct hmcs *h = LOAD((struct hmcs **)&m->state), *fresh = NULL;

	if (h)
		return h;
	/* mmap, not malloc: the mutex may be the allocator's own (jemalloc's,
	 * tcmalloc's), and allocating from inside its lock would re-enter it.
	 * Zero-filled and page-aligned (the 64-byte alignment the leaves need). */
	fresh = mmap(NULL, hmcs_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		abort();
	if (CAS((struct hmcs **)&m->state, &h, fresh))
		return fresh;
	munmap(fresh, hmcs_size());
	return h;
}

static void algo_lock(struct gmutex *m)
{
	struct hmcs *h = hmcs_of(m);
	struct leaf *leaf = &h->leaves[current_node() % nr_nodes];
	struct qnode me, *pred, *succ, *expected;
	uint64_t status;
	unsigned n = 0;

	me.next = NULL;
	STORE(&me.status, WAIT);
	pred = XCHG(&leaf->tail, &me);
	if (pred) {
		STORE(&pred->next, &me);
		while ((status = LOAD(&me.status)) == WAIT)
			spin_wait(&n);
		if (status != ACQUIRE_PARENT)
			goto global_held; /* passed within the node */
	}
	status = 1;
	mcs_acquire(&h->global, &leaf->gnode);
global_held:
	word_lock(m);
	/* Release the front end: pass it within the node while allowed. */
	if (status < THRESHOLD && (succ = LOAD(&me.next))) {
		STORE(&succ->status, status + 1);
		return;
	}
	mcs_release(&h->global, &leaf->gnode);
	succ = LOAD(&me.next);
	if (!succ) {
		expected = &me;
		if (CAS(&leaf->tail, &expected, NULL))
			return;
		while (!(succ = LOAD(&me.next)))
			spin_wait(&n);
	}
	STORE(&succ->status, ACQUIRE_PARENT);
}
#endif

#elif PSLOCK_ALGO == ALGO_CLH
static const char algo_name[] = "clh";
/* CLH: each waiter spins on its predecessor's node and recycles it. */
struct clh_node {
	uint32_t locked;
	char pad[60];
};
static __thread struct clh_node *my_node;

static void algo_lock(struct gmutex *m)
{
	struct clh_node **tail = (struct clh_node **)&m->state, *me, *pred;
	unsigned n = 0;

	if (!my_node && posix_memalign((void **)&my_node, 64, sizeof(*my_node)))
		abort();
	me = my_node;
	STORE(&me->locked, 1);
	pred = XCHG(tail, me);
	if (pred)
		while (LOAD(&pred->locked))
			spin_wait(&n);
	word_lock(m);
	STORE(&me->locked, 0);
	/* A successor may still read `me`; the predecessor's node is ours now.
	 * The first waiter on a fresh mutex has none, so it takes a new node
	 * (one per mutex, never freed: nodes may be read after any unlock). */
	if (pred)
		my_node = pred;
	else
		my_node = NULL;
}

#elif PSLOCK_ALGO == ALGO_HEMLOCK
static const char algo_name[] = "hemlock";
/* Hemlock (Dice & Kogan): one Grant word per thread, a tail per lock. */
struct hem_thread {
	void *grant;
	char pad[56];
};
static __thread struct hem_thread self_node __attribute__((aligned(64)));

static void algo_lock(struct gmutex *m)
{
	struct hem_thread **tail = (struct hem_thread **)&m->state, *pred, *me = &self_node, *expected;
	unsigned n = 0;

	pred = XCHG(tail, me);
	if (pred) {
		while (LOAD(&pred->grant) != (void *)m)
			spin_wait(&n);
		STORE(&pred->grant, NULL); /* acknowledge */
	}
	word_lock(m);
	expected = me;
	if (!CAS(tail, &expected, NULL)) {
		STORE(&me->grant, (void *)m);
		while (LOAD(&me->grant))
			spin_wait(&n);
	}
}

#elif PSLOCK_ALGO == ALGO_CNA
static const char algo_name[] = "cna";
/* CNA (Dice & Kogan): an MCS queue whose lock holder moves waiters from
 * other NUMA nodes to a secondary queue, handing over within its node. */
struct cna_node {
	uintptr_t spin; /* 0 wait; 1 granted; else granted + secondary head */
	int node;
	struct cna_node *sec_tail;
	struct cna_node *next;
};

static unsigned long keep_local_counter;

static int keep_lock_local(void)
{
	/* Flush the secondary queue now and then so remote waiters progress. */
	return (__atomic_add_fetch(&keep_local_counter, 1, __ATOMIC_RELAXED) & 0xff) != 0;
}

static struct cna_node *find_successor(struct cna_node *me)
{
	struct cna_node *next = LOAD(&me->next), *sec_head, *sec_tail, *cur;
	int my_node = me->node >= 0 ? me->node : (me->node = current_node());

	if (next->node == my_node)
		return next;
	sec_head = sec_tail = next;
	cur = LOAD(&next->next);
	while (cur) {
		if (cur->node == my_node) {
			if (me->spin > 1)
				((struct cna_node *)me->spin)->sec_tail->next = sec_head;
			else
				me->spin = (uintptr_t)sec_head;
			sec_tail->next = NULL;
			((struct cna_node *)me->spin)->sec_tail = sec_tail;
			return cur;
		}
		sec_tail = cur;
		cur = LOAD(&cur->next);
	}
	return NULL;
}

static void algo_lock(struct gmutex *m)
{
	struct cna_node **tail = (struct cna_node **)&m->state, me, *pred, *succ, *expected;
	unsigned n = 0;

	me.next = NULL;
	me.spin = 0;
	me.node = -1;
	me.sec_tail = NULL;
	pred = XCHG(tail, &me);
	if (!pred) {
		me.spin = 1;
	} else {
		me.node = current_node();
		STORE(&pred->next, &me);
		while (!LOAD(&me.spin))
			spin_wait(&n);
	}
	word_lock(m);

	/* Release the front end. */
	if (!LOAD(&me.next)) {
		expected = &me;
		if (me.spin == 1) {
			if (CAS(tail, &expected, NULL))
				return;
		} else {
			struct cna_node *sec_head = (struct cna_node *)me.spin;
			if (CAS(tail, &expected, sec_head->sec_tail)) {
				STORE(&sec_head->spin, 1);
				return;
			}
		}
		while (!LOAD(&me.next))
			spin_wait(&n);
	}
	succ = NULL;
	if (keep_lock_local() && (succ = find_successor(&me))) {
		STORE(&succ->spin, me.spin);
	} else if (me.spin > 1) {
		succ = (struct cna_node *)me.spin;
		succ->sec_tail->next = LOAD(&me.next);
		STORE(&succ->spin, 1);
	} else {
		succ = LOAD(&me.next);
		STORE(&succ->spin, 1);
	}
}

#else
#error "unknown PSLOCK_ALGO"
#endif

/* ---- interposed entry points ------------------------------------------------- */

static int (*real_lock)(pthread_mutex_t *);
static int (*real_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
static int (*real_destroy)(pthread_mutex_t *);

/* ---- counters: proof that a program's mutexes go through the algorithm -------
 * Only with PSLOCK_STATS=<file>: each thread counts in its own variables (no
 * shared cache line on the lock path), adds them to the totals when it exits,
 * and the process appends one line to the file at exit. Threads still running
 * at exit are not counted, so the figures are lower bounds. */
static const char *stats_path;
static pthread_key_t stats_key;
static __thread unsigned long t_handled, t_passed;
static __thread int t_registered;
static unsigned long total_handled, total_passed;

static void stats_flush(void *unused)
{
	(void)unused;
	__atomic_fetch_add(&total_handled, t_handled, __ATOMIC_RELAXED);
	__atomic_fetch_add(&total_passed, t_passed, __ATOMIC_RELAXED);
	t_handled = t_passed = 0;
}

static void stats_count(int handled)
{
	if (!t_registered) {
		t_registered = 1;
		pthread_setspecific(stats_key, (void *)1); /* flush at thread exit */
	}
	if (handled)
		t_handled++;
	else
		t_passed++;
}

__attribute__((destructor)) static void stats_write(void)
{
	FILE *f;

	if (!stats_path)
		return;
	stats_flush(NULL); /* the exiting thread's own counts */
	f = fopen(stats_path, "a");
	if (!f)
		return;
	fprintf(f, "pid %d algorithm %s handled %lu passed %lu\n", (int)getpid(),
		algo_name, __atomic_load_n(&total_handled, __ATOMIC_RELAXED),
		__atomic_load_n(&total_passed, __ATOMIC_RELAXED));
	fclose(f);
}

__attribute__((constructor)) static void setup(void)
{
	const char *path;

	if (real_lock)
		return;
	real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_init = (int (*)(pthread_mutex_t *, const pthread_mutexattr_t *))dlsym(RTLD_NEXT, "pthread_mutex_init");
	real_destroy = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_destroy");
	read_topology();
	path = getenv("PSLOCK_STATS");
	if (path && *path && pthread_key_create(&stats_key, stats_flush) == 0)
		stats_path = path;
}

/* Lets tools and tests check which algorithm is loaded. */
const char *pslock_algorithm(void)
{
	return algo_name;
}

int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	struct gmutex *m = (struct gmutex *)mutex;

	if (__builtin_expect(!real_lock, 0))
		setup();
	if (__builtin_expect(stats_path != NULL, 0))
		stats_count(HANDLED(m));
	if (!HANDLED(m))
		return real_lock(mutex);
	algo_lock(m);
	return 0;
}

int pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attr)
{
	int r;

	if (__builtin_expect(!real_init, 0))
		setup();
	r = real_init(mutex, attr);
	if (r == 0 && HANDLED((struct gmutex *)mutex)) {
		((struct gmutex *)mutex)->state = NULL;
		((struct gmutex *)mutex)->state2 = NULL;
	}
	return r;
}

int pthread_mutex_destroy(pthread_mutex_t *mutex)
{
	if (__builtin_expect(!real_destroy, 0))
		setup();
#if PSLOCK_ALGO == ALGO_HMCS
	struct gmutex *m = (struct gmutex *)mutex;

	if (HANDLED(m) && LOAD(&m->lock) == 0) {
		if (m->state)
			munmap(m->state, hmcs_size());
		m->state = NULL;
	}
#endif
	return real_destroy(mutex);
}
