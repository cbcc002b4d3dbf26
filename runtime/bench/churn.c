/* Threaded churn in the manner of larson: each thread keeps an array of
 * objects and replaces a random one at a time (free, then malloc of a random
 * size of 16..256 bytes, first and last byte written); every 4096
 * replacements it hands its whole array to the next thread of a ring and
 * takes the one the previous thread handed it, so it goes on freeing what
 * another thread made. Prints replacements per second over all threads, the
 * share of frees that were of another thread's object, and the peak
 * resident set (VmHWM).
 *
 * The hand-over is a fixed ring, not a shared mailbox that the first comer
 * swaps with: with the mailbox, how often a thread got its own array back
 * depended on how fast the allocator was, so two allocators did different
 * work (11% of frees crossed threads under mimalloc and 44% under corral in
 * one run on a machine whose cores were far apart).
 *
 *   churn THREADS SECONDS */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 4096
#define SWAP_EVERY 4096
#define MAX_THREADS 64

typedef struct {
  void *p[SLOTS];
  int maker[SLOTS];           /* thread that allocated p[i] */
} array_t;

/* box[t]: the array handed to thread t, or NULL; a line each. */
static struct {
  _Alignas(64) _Atomic(array_t *) array;
} box[MAX_THREADS];
static int nthreads;
static atomic_int stop;
static unsigned long long total_ops, total_remote;

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static size_t size_of(uint64_t r) { return 16 + (size_t)(r % 241); }

static void *make(uint64_t r)
{
  size_t n = size_of(r);
  unsigned char *p = malloc(n);
  if (!p) abort();
  p[0] = (unsigned char)r;
  p[n - 1] = (unsigned char)(r >> 8);
  return p;
}

/* Spin a while, then give the core away: more threads than cores must not
 * spin against each other. */
static void pause_a_little(unsigned *spins)
{
  if (++*spins < 1000) __builtin_ia32_pause();
  else sched_yield();
}

/* This process's peak resident set (VmHWM): getrusage's ru_maxrss would
 * also count the image of the process that exec'd this one. */
static long peak_rss_kib(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) kib = atol(line + 6);
  if (f) fclose(f);
  return kib;
}

static void free_array(array_t *a)
{
  for (int i = 0; i < SLOTS; i++) free(a->p[i]);
  free(a);
}

static void *worker(void *arg)
{
  int self = (int)(uintptr_t)arg, next = (self + 1) % nthreads;
  uint64_t x = (uint64_t)(self + 1) * 0x9E3779B97F4A7C15ull + 1;
  array_t *mine = malloc(sizeof *mine);
  for (int i = 0; i < SLOTS; i++) {
    mine->p[i] = make(x = x * 6364136223846793005ull + 1442695040888963407ull);
    mine->maker[i] = self;
  }
  unsigned long long ops = 0, remote = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    for (int k = 0; k < SWAP_EVERY; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      unsigned i = (unsigned)(x >> 33) % SLOTS;
      remote += mine->maker[i] != self;
      free(mine->p[i]);
      mine->p[i] = make(x >> 17);
      mine->maker[i] = self;
    }
    ops += SWAP_EVERY;
    unsigned spins = 0;
    while (atomic_load(&box[next].array) != NULL)     /* the next thread has not taken the last one */
      if (atomic_load(&stop)) goto done;
      else pause_a_little(&spins);
    atomic_store(&box[next].array, mine);
    mine = NULL;
    spins = 0;
    while (!(mine = atomic_exchange(&box[self].array, NULL)))
      if (atomic_load(&stop)) goto done;
      else pause_a_little(&spins);
  }
done:
  if (mine) free_array(mine);
  __atomic_add_fetch(&total_ops, ops, __ATOMIC_RELAXED);
  __atomic_add_fetch(&total_remote, remote, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv)
{
  nthreads = argc > 1 ? atoi(argv[1]) : 2;
  double seconds = argc > 2 ? atof(argv[2]) : 2.0;
  if (nthreads < 1 || nthreads > MAX_THREADS) return 2;
  pthread_t th[MAX_THREADS];
  double start = now();
  for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
  struct timespec d = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&d, NULL);
  atomic_store(&stop, 1);
  for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
  double elapsed = now() - start;
  for (int t = 0; t < nthreads; t++)
    if (box[t].array) free_array(box[t].array);
  printf("ops_per_s %.0f peak_rss_kib %ld ops %llu remote_share %.3f\n", total_ops / elapsed, peak_rss_kib(),
         total_ops, total_ops ? (double)total_remote / total_ops : 0.0);
  return 0;
}
