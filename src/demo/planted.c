/* A program with a planted slowdown, for the why_it_changed campaign: with
 * "hot" it also runs planted_hot_loop, as much work again as common_work,
 * so the differential profile of plain -> hot must name that function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void common_work(long n) {
  for (long i = 0; i < n; i++) sink += (unsigned long)i * 7;
}

__attribute__((noinline)) static void planted_hot_loop(long n) {
  for (long i = 0; i < n; i++) sink ^= (unsigned long)i * 13;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "plain") != 0 && strcmp(argv[1], "hot") != 0)) {
    fprintf(stderr, "usage: %s plain|hot [iterations]\n", argv[0]);
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 400000000L;
  common_work(n);
  if (strcmp(argv[1], "hot") == 0) planted_hot_loop(n);
  printf("iterations=%ld\n", n);
  return 0;
}
