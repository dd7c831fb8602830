/*
 * lat_ops: latency of basic operations (lmbench's lat_ops): xor, add, mul,
 * div, mod on int and int64; add, mul, div on float and double.
 *
 * Each operation takes the previous result as an operand, so the chain runs
 * at the operation's latency, not its throughput; the other operand comes
 * from a volatile seed so nothing is known at compile time, and an empty
 * asm after each step pins the value in a register so the compiler cannot
 * fold or re-associate the chain (e.g. 64 adds of y into one add of 64*y).
 * The loop's own counter runs beside the chain and hides in its latency.
 * Values stay in range: floats alternate x+1, x-1 / x*1.25, x*0.8 /
 * x/1.25, x/0.8; integer division divides by 1 (a full-width quotient, the
 * slow case of dividers with early exit); mod is (x % 3) | high bit, so the
 * next dividend is large again, at the price of one OR per step.
 * Not scalable (as in lmbench3): no -P.
 *
 * usage: lat_ops [-W warmup_us] [-N repetitions] [-C calfile] OP... | all
 * OP: int_xor int_add int_mul int_div int_mod, int64_xor ... int64_mod,
 *     float_add float_mul float_div, double_add double_mul double_div
 * Prints "lat_ops.<op> <latency> ns" per operation (and ".min").
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <string.h>

#define STEPS 64 /* dependent operations per loop iteration */

#define IBAR(x) __asm__ __volatile__("" : "+r"(x))
#if defined(__x86_64__) || defined(__i386__)
#define FBAR(x) __asm__ __volatile__("" : "+x"(x))
#elif defined(__aarch64__)
#define FBAR(x) __asm__ __volatile__("" : "+w"(x))
#else
#define FBAR(x) __asm__ __volatile__("" : "+m"(x)) /* adds a store and a load */
#endif

/* Seeds the compiler cannot see through. */
static volatile int64_t seed_x = 0x7ffffff1, seed_x64 = 0x7ffffffffffffff1LL, seed_one = 1, seed_three = 3,
			 seed_five = 5, seed_high = 1LL << 30, seed_high64 = 1LL << 62;
static volatile double seed_fx = 1.5, seed_fa[3][2] = { { 1.0, -1.0 }, { 1.25, 0.8 }, { 1.25, 0.8 } };
static volatile double sink;

/* fname: STEPS dependent steps per iteration, alternating op A and op B. */
#define CHAIN(fname, T, BAR, X0, A0, B0, OPA, OPB)                 \
	static void fname(iter_t n, void *cookie)                  \
	{                                                          \
		T x = (T)(X0), a = (T)(A0), b = (T)(B0);           \
		(void)cookie;                                      \
		while (n--)                                        \
			for (int i = 0; i < STEPS / 2; i++) {      \
				x = OPA;                           \
				BAR(x);                            \
				x = OPB;                           \
				BAR(x);                            \
			}                                          \
		sink = (double)x;                                  \
	}

/* Integers: a and b are seeds; h is the high bit for mod. */
#define INT_CHAINS(prefix, T, U, XSEED, HIGH)                                                              \
	CHAIN(prefix##_xor, U, IBAR, XSEED, seed_three, seed_five, x ^ a, x ^ b)                           \
	CHAIN(prefix##_add, U, IBAR, XSEED, seed_three, seed_five, x + a, x + b)                           \
	CHAIN(prefix##_mul, U, IBAR, XSEED, seed_three, seed_five, x * a, x * b)                           \
	CHAIN(prefix##_div, T, IBAR, XSEED, seed_one, seed_one, x / a, x / b)                              \
	CHAIN(prefix##_mod, T, IBAR, XSEED, seed_three, HIGH, (x % a) | b, (x % a) | b)

INT_CHAINS(int, int32_t, uint32_t, seed_x, seed_high)
INT_CHAINS(int64, int64_t, uint64_t, seed_x64, seed_high64)

#define FLOAT_CHAINS(prefix, T)                                                                            \
	CHAIN(prefix##_add, T, FBAR, seed_fx, seed_fa[0][0], seed_fa[0][1], x + a, x + b)                  \
	CHAIN(prefix##_mul, T, FBAR, seed_fx, seed_fa[1][0], seed_fa[1][1], x * a, x * b)                  \
	CHAIN(prefix##_div, T, FBAR, seed_fx, seed_fa[2][0], seed_fa[2][1], x / a, x / b)

FLOAT_CHAINS(float, float)
FLOAT_CHAINS(double, double)

static const struct {
	const char *name;
	benchmp_f f;
} ops[] = {
	{ "int_xor", int_xor },	      { "int_add", int_add },	    { "int_mul", int_mul },
	{ "int_div", int_div },	      { "int_mod", int_mod },	    { "int64_xor", int64_xor },
	{ "int64_add", int64_add },   { "int64_mul", int64_mul },   { "int64_div", int64_div },
	{ "int64_mod", int64_mod },   { "float_add", float_add },   { "float_mul", float_mul },
	{ "float_div", float_div },   { "double_add", double_add }, { "double_mul", double_mul },
	{ "double_div", double_div },
};
#define NOPS ((int)(sizeof(ops) / sizeof(ops[0])))

static int run(int k, int warmup, int reps)
{
	char name[64];

	if (benchmp(NULL, ops[k].f, NULL, 0, 1, warmup, reps, NULL))
		return 1;
	snprintf(name, sizeof(name), "lat_ops.%s", ops[k].name);
	nano(name, get_n() * STEPS);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES;

	first = harness_options(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || parallel != 1)
		goto usage;
	for (int i = first; i < argc; i++) { /* all names valid before running any */
		int known = !strcmp(argv[i], "all");
		for (int k = 0; k < NOPS; k++)
			known |= !strcmp(argv[i], ops[k].name);
		if (!known)
			goto usage;
	}
	for (int i = first; i < argc; i++)
		for (int k = 0; k < NOPS; k++)
			if ((!strcmp(argv[i], "all") || !strcmp(argv[i], ops[k].name)) && run(k, warmup, reps))
				return 1;
	return 0;
usage:
	fprintf(stderr, "usage: lat_ops [-W warmup_us] [-N repetitions] [-C calfile] OP...|all (not scalable: no -P)\n"
			"OP: {int,int64}_{xor,add,mul,div,mod}, {float,double}_{add,mul,div}\n");
	return 2;
}
