/* Threaded churn in the manner of larson: each thread keeps an array of
 * objects and replaces a random one at a time (free, then malloc of a random
 * size of 16..256 bytes, first and last byte written); every 4096
 * replacements it swaps its whole array with a shared mailbox, so the next
 * thread frees what this one made. Prints replacements per second over all
 * threads and the peak resident set.
 *
 *   churn THREADS SECONDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define SLOTS 4096
#define SWAP_EVERY 4096

typedef struct { void *p[SLOTS]; } array_t;

static array_t *mailbox;
static pthread_mutex_t mailbox_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static unsigned long long total_ops;

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

static void *worker(void *arg)
{
  uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  array_t *mine = malloc(sizeof *mine);
  for (int i = 0; i < SLOTS; i++) mine->p[i] = make(x = x * 6364136223846793005ull + 1442695040888963407ull);
  unsigned long long ops = 0;
  while (!stop) {
    for (int k = 0; k < SWAP_EVERY; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      unsigned i = (unsigned)(x >> 33) % SLOTS;
      free(mine->p[i]);
      mine->p[i] = make(x >> 17);
    }
    ops += SWAP_EVERY;
    pthread_mutex_lock(&mailbox_lock);
    array_t *t = mailbox;
    mailbox = mine;
    mine = t;
    pthread_mutex_unlock(&mailbox_lock);
  }
  for (int i = 0; i < SLOTS; i++) free(mine->p[i]);
  free(mine);
  __atomic_add_fetch(&total_ops, ops, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv)
{
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  double seconds = argc > 2 ? atof(argv[2]) : 2.0;
  if (threads < 1 || threads > 64) return 2;
  mailbox = malloc(sizeof *mailbox);
  for (int i = 0; i < SLOTS; i++) mailbox->p[i] = make((uint64_t)i * 977);
  pthread_t th[64];
  double start = now();
  for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)(t + 1));
  struct timespec d = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&d, NULL);
  stop = 1;
  for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
  double elapsed = now() - start;
  for (int i = 0; i < SLOTS; i++) free(mailbox->p[i]);
  free(mailbox);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("ops_per_s %.0f peak_rss_kib %ld ops %llu\n", total_ops / elapsed, ru.ru_maxrss, total_ops);
  return 0;
}
