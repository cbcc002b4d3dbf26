/* Helpers every workload shares: a seeded generator, so that inputs are
 * deterministic without input files, and the checksum line the harness
 * compares between allocator configurations. Header-only: each workload is
 * one small program and links nothing of ours (except sharedlib's own .so). */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* splitmix64: tiny, good enough for shuffles, identical on every run. */
static inline uint64_t bench_next(uint64_t *state)
{
   uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
   z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
   z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
   return z ^ (z >> 31);
}

static inline uint64_t bench_below(uint64_t *state, uint64_t bound)
{
   return bench_next(state) % bound;
}

/* Order-sensitive mixing: a checksum that changes when results arrive in a
 * different order, so a layout bug that reorders traversals is caught. */
static inline uint64_t bench_mix(uint64_t sum, uint64_t value)
{
   return (sum ^ value) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
}

static inline long bench_arg(int argc, char **argv, int index, long fallback)
{
   return argc > index ? atol(argv[index]) : fallback;
}

/* The harness reads the last line that starts with "checksum ". */
static inline void bench_print_checksum(uint64_t sum)
{
   printf("checksum %016llx\n", (unsigned long long)sum);
}

static inline void *bench_die_oom(void)
{
   fputs("out of memory\n", stderr);
   exit(2);
}

#endif
