/*
 * par_ops: instruction-level parallelism of basic operations (lmbench's
 * par_ops): for each operation, k independent dependent chains (k = 1..16)
 * run together, ten steps of each per iteration; the parallelism at k is k
 * x the time of one chain over the time of k, and the result the largest
 * over k (as lmbench, from the shortest intervals). The steps are
 * lmbench's, operation by operation:
 *   int/int64 bit  r ^= s; s ^= r; r |= s        add  a += b; b -= a
 *             mul  r *= s (r brought back by one subtraction per iteration)
 *             div  r = s / r                     mod  r %= s; r |= s
 *                                                (int64 mod: r = (s % r) ^ r)
 *   float/double add  r += r (r += s per iteration)   mul  r *= r; r *= s
 *                div  r = s / r
 * with lmbench's starting values, so every chain stays in range. An empty
 * asm after each step keeps the value in a register as it is, so the
 * compiler can neither fold the steps nor re-associate a chain (lmbench
 * relies on -O not doing so). Not scalable, as in lmbench.
 *
 * usage: par_ops [-W warmup_us] [-N repetitions] [-C calfile] [OP...|all]
 * OP: int_bit int_add int_mul int_div int_mod, int64_bit ... int64_mod,
 *     float_add float_mul float_div, double_add double_mul double_div
 * Prints one comment line per k, then per OP "par_ops.<op> <ns> ns" (one
 * chain's time per step), ".min" and "par_ops.<op>.parallelism <p> x".
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 16
#define STEPS 10 /* steps of each chain per iteration */

#define IBAR(x) __asm__ __volatile__("" : "+r"(x))
#if defined(__x86_64__) || defined(__i386__)
#define FBAR(x) __asm__ __volatile__("" : "+x"(x))
#elif defined(__aarch64__)
#define FBAR(x) __asm__ __volatile__("" : "+w"(x))
#else
#define FBAR(x) __asm__ __volatile__("" : "+m"(x))
#endif

/* The chains' inputs, which the compiler cannot see: chain N starts from
 * seed[N] = N + 1 (lmbench's int_data) and 1.0 (its double_data); V(N) is
 * lmbench's int_data[N] - N + 1, 2 in every chain. */
static volatile int seed[WIDTH] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static volatile double dseed[WIDTH] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
static volatile double sink;
#define V(N) (seed[N] - N + 1)

#define R1(m) m(0)
#define R2(m) R1(m) m(1)
#define R3(m) R2(m) m(2)
#define R4(m) R3(m) m(3)
#define R5(m) R4(m) m(4)
#define R6(m) R5(m) m(5)
#define R7(m) R6(m) m(6)
#define R8(m) R7(m) m(7)
#define R9(m) R8(m) m(8)
#define R10(m) R9(m) m(9)
#define R11(m) R10(m) m(10)
#define R12(m) R11(m) m(11)
#define R13(m) R12(m) m(12)
#define R14(m) R13(m) m(13)
#define R15(m) R14(m) m(14)
#define R16(m) R15(m) m(15)
#define TEN(s) s s s s s s s s s s

/* One function per (operation, k): the operation's DECL, INIT, EACH (once
 * per iteration), STEP and KEEP, each a macro of the chain's index N. */
#define PAR_FN(op, K)                                           \
	static void op##_##K(iter_t n, void *cookie)            \
	{                                                       \
		(void)cookie;                                   \
		R##K(op##_DECL) R##K(op##_INIT) while (n--)     \
		{                                               \
			R##K(op##_EACH) TEN(R##K(op##_STEP))    \
		}                                               \
		R##K(op##_KEEP)                                 \
	}
#define PAR_OP(op)                                                                                       \
	PAR_FN(op, 1)                                                                                    \
	PAR_FN(op, 2)                                                                                    \
	PAR_FN(op, 3)                                                                                    \
	PAR_FN(op, 4)                                                                                    \
	PAR_FN(op, 5)                                                                                    \
	PAR_FN(op, 6)                                                                                    \
	PAR_FN(op, 7)                                                                                    \
	PAR_FN(op, 8)                                                                                    \
	PAR_FN(op, 9)                                                                                    \
	PAR_FN(op, 10)                                                                                   \
	PAR_FN(op, 11)                                                                                   \
	PAR_FN(op, 12)                                                                                   \
	PAR_FN(op, 13)                                                                                   \
	PAR_FN(op, 14)                                                                                   \
	PAR_FN(op, 15)                                                                                   \
	PAR_FN(op, 16)                                                                                   \
	static const benchmp_f op##_width[WIDTH] = { op##_1,  op##_2,  op##_3,	op##_4,	 op##_5,  op##_6, \
						     op##_7,  op##_8,  op##_9,	op##_10, op##_11, op##_12, \
						     op##_13, op##_14, op##_15, op##_16 };

/* ---- the operations ---------------------------------------------------------------- */

#define int_bit_DECL(N) int r##N, s##N;
#define int_bit_INIT(N) r##N = seed[N] + 1, s##N = (N + 1) + r##N;
#define int_bit_EACH(N)
#define int_bit_STEP(N) r##N ^= s##N; IBAR(r##N); s##N ^= r##N; IBAR(s##N); r##N |= s##N; IBAR(r##N);
#define int_bit_KEEP(N) sink += r##N;
PAR_OP(int_bit)

#define int_add_DECL(N) int a##N, b##N;
#define int_add_INIT(N) a##N = seed[N] + 57, b##N = seed[N] + 31;
#define int_add_EACH(N)
#define int_add_STEP(N) a##N += b##N; IBAR(a##N); b##N -= a##N; IBAR(b##N);
#define int_add_KEEP(N) sink += a##N + b##N;
PAR_OP(int_add)

/* r x s^10, then minus t = r0 x s^10 - r0: back to r0 every iteration. */
#define int_mul_DECL(N) unsigned r##N, s##N, t##N;
#define int_mul_INIT(N)                                                         \
	r##N = (unsigned)V(N) + 37431, s##N = (unsigned)V(N) + 4, \
	t##N = r##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N - r##N, r##N += t##N;
#define int_mul_EACH(N) r##N -= t##N; IBAR(r##N);
#define int_mul_STEP(N) r##N *= s##N; IBAR(r##N);
#define int_mul_KEEP(N) sink += r##N;
PAR_OP(int_mul)

#define int_div_DECL(N) int r##N, s##N;
#define int_div_INIT(N) r##N = V(N) + 36, s##N = (r##N + 1) << 20;
#define int_div_EACH(N)
#define int_div_STEP(N) r##N = s##N / r##N; IBAR(r##N);
#define int_div_KEEP(N) sink += r##N;
PAR_OP(int_div)

#define int_mod_DECL(N) int r##N, s##N;
#define int_mod_INIT(N) r##N = V(N) + (int)n, s##N = V(N) + 62;
#define int_mod_EACH(N)
#define int_mod_STEP(N) r##N %= s##N; IBAR(r##N); r##N |= s##N; IBAR(r##N);
#define int_mod_KEEP(N) sink += r##N;
PAR_OP(int_mod)

#define int64_bit_DECL(N) int64_t r##N, s##N, i##N;
#define int64_bit_INIT(N)                                                                            \
	r##N = V(N), r##N |= r##N << 32, s##N = (int64_t)n + V(N), \
	s##N |= s##N << 32, i##N = (s##N << 2) - 1;
#define int64_bit_EACH(N) i##N -= 1; IBAR(i##N);
#define int64_bit_STEP(N) r##N ^= i##N; IBAR(r##N); s##N ^= r##N; IBAR(s##N); r##N |= s##N; IBAR(r##N);
#define int64_bit_KEEP(N) sink += (double)r##N;
PAR_OP(int64_bit)

#define int64_add_DECL(N) int64_t a##N, b##N;
#define int64_add_INIT(N)                                                                   \
	a##N = V(N) + 37420, a##N += (int64_t)(0xFE + V(N)) << 30, b##N = V(N) + 21698324, \
	b##N += (int64_t)(0xFFFE + V(N)) << 29;
#define int64_add_EACH(N)
#define int64_add_STEP(N) a##N += b##N; IBAR(a##N); b##N -= a##N; IBAR(b##N);
#define int64_add_KEEP(N) sink += (double)(a##N + b##N);
PAR_OP(int64_add)

#define int64_mul_DECL(N) uint64_t r##N, s##N, t##N;
#define int64_mul_INIT(N)                                                                                   \
	r##N = (uint64_t)(V(N) + 37420) + ((uint64_t)(V(N) + 6) << 32), s##N = (uint64_t)(V(N) + 4), \
	t##N = r##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N * s##N - r##N, r##N += t##N;
#define int64_mul_EACH(N) r##N -= t##N; IBAR(r##N);
#define int64_mul_STEP(N) r##N *= s##N; IBAR(r##N);
#define int64_mul_KEEP(N) sink += (double)r##N;
PAR_OP(int64_mul)

#define int64_div_DECL(N) int64_t r##N, s##N;
#define int64_div_INIT(N) r##N = seed[N] - N + 37, r##N += r##N << 33, s##N = (r##N + 17) << 13;
#define int64_div_EACH(N)
#define int64_div_STEP(N) r##N = s##N / r##N; IBAR(r##N);
#define int64_div_KEEP(N) sink += (double)r##N;
PAR_OP(int64_div)

/* r = (s % r) ^ r, s counting up: r stays at least 1 (r % ... < r, ^ r keeps its top bit). */
#define int64_mod_DECL(N) int64_t r##N, s##N;
#define int64_mod_INIT(N) r##N = seed[N], s##N = 0;
#define int64_mod_EACH(N) s##N++; IBAR(s##N);
#define int64_mod_STEP(N) r##N = (s##N % r##N) ^ r##N; IBAR(r##N);
#define int64_mod_KEEP(N) sink += (double)r##N;
PAR_OP(int64_mod)

/* 1 + 1023 ... : r + s = 1, doubled ten times = 1024 = r again. */
#define float_add_DECL(N) float r##N, s##N;
#define float_add_INIT(N) r##N = (float)dseed[N] + 1023.0f, s##N = -1023.0f;
#define float_add_EACH(N) r##N += s##N; FBAR(r##N);
#define float_add_STEP(N) r##N += r##N; FBAR(r##N);
#define float_add_KEEP(N) sink += r##N;
PAR_OP(float_add)

/* 8 x 8 x 0.125 = 8. */
#define float_mul_DECL(N) float r##N, s##N;
#define float_mul_INIT(N) r##N = 8.0f * (float)dseed[N], s##N = 0.125f * (float)dseed[N];
#define float_mul_EACH(N)
#define float_mul_STEP(N) r##N *= r##N; FBAR(r##N); r##N *= s##N; FBAR(r##N);
#define float_mul_KEEP(N) sink += r##N;
PAR_OP(float_mul)

#define float_div_DECL(N) float r##N, s##N;
#define float_div_INIT(N) r##N = 1.41421356f * (float)dseed[N], s##N = 3.14159265f * (float)V(N);
#define float_div_EACH(N)
#define float_div_STEP(N) r##N = s##N / r##N; FBAR(r##N);
#define float_div_KEEP(N) sink += r##N;
PAR_OP(float_div)

#define double_add_DECL(N) double r##N, s##N;
#define double_add_INIT(N) r##N = dseed[N] + 1023.0, s##N = -1023.0;
#define double_add_EACH(N) r##N += s##N; FBAR(r##N);
#define double_add_STEP(N) r##N += r##N; FBAR(r##N);
#define double_add_KEEP(N) sink += r##N;
PAR_OP(double_add)

#define double_mul_DECL(N) double r##N, s##N;
#define double_mul_INIT(N) r##N = 8.0 * dseed[N], s##N = 0.125 * dseed[N];
#define double_mul_EACH(N)
#define double_mul_STEP(N) r##N *= r##N; FBAR(r##N); r##N *= s##N; FBAR(r##N);
#define double_mul_KEEP(N) sink += r##N;
PAR_OP(double_mul)

#define double_div_DECL(N) double r##N, s##N;
#define double_div_INIT(N) r##N = 1.41421356 * dseed[N], s##N = 3.14159265 * (double)V(N);
#define double_div_EACH(N)
#define double_div_STEP(N) r##N = s##N / r##N; FBAR(r##N);
#define double_div_KEEP(N) sink += r##N;
PAR_OP(double_div)

static const struct {
	const char *name;
	const benchmp_f *width;
} ops[] = {
	{ "int_bit", int_bit_width },	    { "int_add", int_add_width },	{ "int_mul", int_mul_width },
	{ "int_div", int_div_width },	    { "int_mod", int_mod_width },	{ "int64_bit", int64_bit_width },
	{ "int64_add", int64_add_width },   { "int64_mul", int64_mul_width },	{ "int64_div", int64_div_width },
	{ "int64_mod", int64_mod_width },   { "float_add", float_add_width },	{ "float_mul", float_mul_width },
	{ "float_div", float_div_width },   { "double_add", double_add_width }, { "double_mul", double_mul_width },
	{ "double_div", double_div_width },
};
#define NOPS (int)(sizeof(ops) / sizeof(ops[0]))

static int measure(int k, int warmup, int reps)
{
	double one = 0, one_all = 0, best = 1.0;
	char name[64];

	for (int width = 1; width <= WIDTH; width++) {
		double t, t_all;

		if (benchmp(NULL, ops[k].width[width - 1], NULL, 0, 1, warmup, reps, NULL))
			return -1;
		/* ns per step of one chain: the shortest interval (lmbench's
		 * par_ops saves the minimum), and the median for the record */
		t = (double)gettime_min() / ((double)get_n_min() * STEPS);
		t_all = (double)gettime() / ((double)get_n() * STEPS);
		printf("# par_ops %s %d chain%s: %.4f ns per step (min), %.4f (median)\n", ops[k].name, width,
		       width > 1 ? "s" : "", t, t_all);
		harness_note();
		if (width == 1) {
			one = t;
			one_all = t_all;
		} else if (width * one / t > best)
			best = width * one / t;
	}
	snprintf(name, sizeof(name), "par_ops.%s", ops[k].name);
	result_line(name, one_all, "ns");
	snprintf(name, sizeof(name), "par_ops.%s.min", ops[k].name);
	result_line(name, one, "ns");
	snprintf(name, sizeof(name), "par_ops.%s.parallelism", ops[k].name);
	result_line(name, best, "x");
	return 0;
}

int main(int argc, char **argv)
{
	int first, parallel = 1, warmup = 0, reps = TRIES, chosen[NOPS * 4], count = 0;

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || parallel != 1 || argc - first > (int)(sizeof(chosen) / sizeof(chosen[0])))
		goto usage;
	if (first == argc || (argc - first == 1 && !strcmp(argv[first], "all")))
		for (int k = 0; k < NOPS; k++)
			chosen[count++] = k;
	else
		for (int a = first; a < argc; a++) {
			int k = 0;
			while (k < NOPS && strcmp(ops[k].name, argv[a]))
				k++;
			if (k == NOPS)
				goto usage;
			chosen[count++] = k;
		}
	for (int c = 0; c < count; c++)
		if (measure(chosen[c], warmup, reps))
			return 1;
	return 0;
usage:
	fprintf(stderr, "usage: par_ops [-W warmup_us] [-N repetitions] [-C calfile] [OP...|all] (not scalable: no -P)\n"
			"OP: int_bit int_add int_mul int_div int_mod int64_bit int64_add int64_mul int64_div int64_mod\n"
			"    float_add float_mul float_div double_add double_mul double_div\n");
	return 2;
}
