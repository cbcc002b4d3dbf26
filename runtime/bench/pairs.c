/* ns per malloc+free pair for 16..256-byte objects: per round, 32 LIFO pairs
 * (allocate, touch, free at once) and a batch of 32 freed in allocation
 * order. Three copies of the loop, so a plan can group one call site by
 * frame 0 (grouped_rounds), group another by a frame further up
 * (walked_rounds, reached through hop1..hop5: the call in hop1 is frame 1,
 * the one in hop5 frame 5) and leave the third (other_rounds) alone.
 * Compiled as C++ (pairs_new_*), the same loops pair operator new with
 * operator delete.
 * usage: pairs grouped|other|deep [pairs] -> prints "ns_per_pair N" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
#include <new>
#define ALLOC(n) static_cast<char *>(operator new(n))
#define RELEASE(p) operator delete(p)
extern "C" {      /* unmangled names: run.py finds the calls by function */
#else
#define ALLOC(n) ((char *)malloc(n))
#define RELEASE(p) free(p)
#endif

#define BATCH 32

static size_t sizes[256];
static void *volatile sink;

#define ROUND_BODY(iter)                                   \
  do {                                                     \
    void *batch[BATCH];                                    \
    for (unsigned i = 0; i < BATCH; i++) {                 \
      char *p = ALLOC(sizes[(iter + i) & 255]);            \
      p[0] = (char)i;                                      \
      sink = p;                                            \
      RELEASE(p);                                          \
    }                                                      \
    for (unsigned i = 0; i < BATCH; i++) {                 \
      char *p = ALLOC(sizes[(iter * 7 + i) & 255]);        \
      p[0] = (char)i;                                      \
      batch[i] = p;                                        \
    }                                                      \
    for (unsigned i = 0; i < BATCH; i++) RELEASE(batch[i]); \
  } while (0)

__attribute__((noinline)) void grouped_rounds(unsigned long rounds)
{
  for (unsigned long r = 0; r < rounds; r++) ROUND_BODY(r);
}

__attribute__((noinline)) void other_rounds(unsigned long rounds)
{
  for (unsigned long r = 0; r < rounds; r++) ROUND_BODY(r);
}

__attribute__((noinline)) void walked_rounds(unsigned long rounds)
{
  for (unsigned long r = 0; r < rounds; r++) ROUND_BODY(r);
}

/* The volatile store after each call keeps it a call (not a tail jump), so
 * every hop stays on the stack. */
static volatile int hops_done;
#define HOP(k, next) \
  __attribute__((noinline)) void hop##k(unsigned long rounds) { next(rounds); hops_done++; }
HOP(1, walked_rounds) HOP(2, hop1) HOP(3, hop2) HOP(4, hop3) HOP(5, hop4)

static double now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);   /* CPU time: less noise on a shared machine */
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "other";
  unsigned long pairs = argc > 2 ? strtoul(argv[2], NULL, 10) : 4000000;
  unsigned long rounds = pairs / (2 * BATCH);
  unsigned seed = 12345;
  for (int i = 0; i < 256; i++) {
    seed = seed * 1103515245u + 12345u;
    sizes[i] = 16 + ((seed >> 16) % 31) * 8;          /* 16..256 */
  }
  void (*work)(unsigned long) = strcmp(mode, "grouped") == 0 ? grouped_rounds
                              : strcmp(mode, "deep") == 0    ? hop5
                                                             : other_rounds;
  work(rounds / 10 + 1);                                 /* warm up: chunks, caches, plan */
  double t0 = now_ns();
  work(rounds);
  double t1 = now_ns();
  printf("ns_per_pair %.2f\n", (t1 - t0) / (double)(rounds * 2 * BATCH));
  return 0;
}

#ifdef __cplusplus
}
#endif
