/* N iterations (argv[1]) of arithmetic a volatile store keeps from being
 * folded away: a fixed amount of work (tests/test_valgrind.py, bench/instructions.py). */
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    volatile unsigned long sink = 0;
    unsigned long x = 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x ^ (x >> 17);
    }
    return (int)(sink & 0);
}
