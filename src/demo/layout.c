/*
 * layout.c: a program whose speed depends on where the linker put one
 * function: known truth for perfsnake's noise floor (`noise_floor`).
 *
 * usage: layout WORK [LABEL]
 *
 * It calls kernel() WORK x 100,000 times, scaled by kernel()'s 16-byte slot
 * within a 128-byte block (1 + slot/64: up to 11 % more calls). The slot is
 * fixed for one build and moves when the function order changes, so builds
 * that differ only in layout differ in speed, as real programs do through
 * alignment and cache-line neighbours, here by design and visibly. It
 * prints `slot=`, `iterations=` (the calls, exact) and `checksum=`. LABEL
 * is ignored: two records that differ only in it run the same program.
 *
 * The filler functions give the linker something to reorder around kernel().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FILLER(n)                                                              \
	__attribute__((noinline)) unsigned long filler##n(unsigned long x)     \
	{                                                                      \
		for (int i = 0; i < n; i++)                                    \
			x = x * 6364136223846793005UL + (unsigned long)i;      \
		return x;                                                      \
	}

FILLER(1) FILLER(2) FILLER(3) FILLER(4) FILLER(5) FILLER(6) FILLER(7)
FILLER(8) FILLER(9) FILLER(10) FILLER(11) FILLER(12) FILLER(13) FILLER(14)

__attribute__((noinline)) unsigned long kernel(unsigned long x)
{
	return x * 2862933555777941757UL + 3037000493UL;
}

static unsigned long (*const fillers[])(unsigned long) = {
	filler1, filler2, filler3, filler4, filler5, filler6, filler7,
	filler8, filler9, filler10, filler11, filler12, filler13, filler14,
};

int main(int argc, char **argv)
{
	unsigned long (*volatile hot)(unsigned long) = kernel;
	unsigned long slot, work, calls, x = 1;

	if (argc < 2 || (work = strtoul(argv[1], NULL, 10)) == 0) {
		fprintf(stderr, "usage: %s WORK [LABEL]\n", argv[0]);
		return 2;
	}
	slot = ((uintptr_t)kernel >> 4) & 7;
	calls = work * 100000UL * (64 + slot) / 64;
	for (unsigned long i = 0; i < calls; i++)
		x = hot(x);
	for (size_t i = 0; i < sizeof(fillers) / sizeof(fillers[0]); i++)
		x ^= fillers[i](x);
	printf("slot=%lu\niterations=%lu\nchecksum=%lu\n", slot, calls, x);
	return 0;
}
