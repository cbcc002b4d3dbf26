/* ns per malloc+free pair for 16..256-byte objects: per round, 32 LIFO pairs
 * (allocate, touch, free at once) and a batch of 32 freed in allocation
 * order. Two copies of the loop, so a plan can group one call site
 * (grouped_rounds) and leave the other (other_rounds) alone.
 * usage: pairs grouped|other [pairs] -> prints "ns_per_pair N" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 32

static size_t sizes[256];
static void *volatile sink;

#define ROUND_BODY(iter)                                   \
  do {                                                     \
    void *batch[BATCH];                                    \
    for (unsigned i = 0; i < BATCH; i++) {                 \
      char *p = malloc(sizes[(iter + i) & 255]);           \
      p[0] = (char)i;                                      \
      sink = p;                                            \
      free(p);                                             \
    }                                                      \
    for (unsigned i = 0; i < BATCH; i++) {                 \
      char *p = malloc(sizes[(iter * 7 + i) & 255]);       \
      p[0] = (char)i;                                      \
      batch[i] = p;                                        \
    }                                                      \
    for (unsigned i = 0; i < BATCH; i++) free(batch[i]);   \
  } while (0)

__attribute__((noinline)) void grouped_rounds(unsigned long rounds)
{
  for (unsigned long r = 0; r < rounds; r++) ROUND_BODY(r);
}

__attribute__((noinline)) void other_rounds(unsigned long rounds)
{
  for (unsigned long r = 0; r < rounds; r++) ROUND_BODY(r);
}

static double now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);   /* CPU time: less noise on a shared machine */
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
  int grouped = argc > 1 && strcmp(argv[1], "grouped") == 0;
  unsigned long pairs = argc > 2 ? strtoul(argv[2], NULL, 10) : 4000000;
  unsigned long rounds = pairs / (2 * BATCH);
  unsigned seed = 12345;
  for (int i = 0; i < 256; i++) {
    seed = seed * 1103515245u + 12345u;
    sizes[i] = 16 + ((seed >> 16) % 31) * 8;          /* 16..256 */
  }
  void (*work)(unsigned long) = grouped ? grouped_rounds : other_rounds;
  work(rounds / 10 + 1);                                 /* warm up: chunks, caches, plan */
  double t0 = now_ns();
  work(rounds);
  double t1 = now_ns();
  printf("ns_per_pair %.2f\n", (t1 - t0) / (double)(rounds * 2 * BATCH));
  return 0;
}
