/* Chunks a thread filled stay its own (runtime/src/heap/chunk.c, "Held
 * chunks"), and a thread's current chunks go to the next thread that wants
 * one (abandoned at its exit). Run with every small object pooled in one
 * pool per size class (random pools=1, or safe mode: every malloc here is
 * one site, fill's), chunks of 1 MiB.
 *
 *   core_held refill:  three chunks' worth of 64-byte objects, every other
 *                      one freed, then as many again: they fit in the
 *                      chunks the first ones filled (held, then taken back
 *                      once an eighth is free); then everything is freed.
 *                      test_core_held.py counts under callgrind that no
 *                      free was another thread's.
 *   core_held handoff: a thread fills part of a chunk and exits; the next
 *                      thread's first object comes from that chunk, and
 *                      its frees of the first thread's objects are its own.
 *   core_held remote:  a thread fills three chunks, another frees it all,
 *                      and the first fills them again: its held chunks
 *                      drained and made current (the debug build checks
 *                      every hand-over).
 *   core_held producer: another thread frees what this one makes, a few
 *                      thousand objects at a time, until more than half
 *                      a chunk came back through its remote stack; then
 *                      two chunks' worth, freed by the other thread too.
 *                      The chunk is retired when full, not held, so that
 *                      the other thread's last free releases it
 *                      (test_core_held.py counts the release).
 *   core_held adopted: a thread makes 10,000 objects and exits; the next
 *                      frees all but one of them (through the exited
 *                      thread's chunk's remote stack), then fills two
 *                      chunks' worth, adopting that chunk first, and
 *                      frees them: the frees drained on adoption were not
 *                      the new owner's consumers', so the chunk is held
 *                      when full and those last frees are local
 *                      (test_core_held.py counts the remote ones).
 *   core_held many:    eight chunks' worth kept, then freed, by the
 *                      main thread alone: it holds them all (up to 64
 *                      besides its current one), no chunk is retired;
 *   core_held many-busy: the same while another thread lives: the
 *                      thread holds four chunks besides its current one
 *                      and retires the oldest past that
 *                      (test_core_held.py counts the retirements). */
#include "core_check.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define CHUNK ((uintptr_t)1 << 20)
#define SIZE 64
#define N (3 * (int)(CHUNK / SIZE))        /* three chunks' worth */
#define SOME 1000
#define ROUND 4000                         /* producer's objects a round */
#define BEFORE 10000                       /* adopted: the exited thread's objects */

static void *objects[N], *more[N];

static uintptr_t chunk_of(const void *p) { return (uintptr_t)p & ~(CHUNK - 1); }

/* Every object of this program comes from this one call site. */
static __attribute__((noinline)) void fill(void **v, int n)
{
  for (int i = 0; i < n; i++) {
    v[i] = malloc(SIZE);
    memset(v[i], 0x5a, SIZE);
  }
}

static __attribute__((noinline)) void release(void **v, int from, int n, int step)
{
  for (int i = from; i < n; i += step) free(v[i]);
}

/* Distinct chunks of v[0..n), at most `max`, into bases. */
static int chunks_of(void **v, int n, uintptr_t *bases, int max)
{
  int k = 0;
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < k && bases[j] != chunk_of(v[i])) j++;
    if (j == k && k < max) bases[k++] = chunk_of(v[i]);
  }
  return k;
}

static int in_chunks(const void *p, const uintptr_t *bases, int k)
{
  for (int j = 0; j < k; j++)
    if (bases[j] == chunk_of(p)) return 1;
  return 0;
}

static void refill(void)
{
  uintptr_t bases[16];
  fill(objects, N);
  int k = chunks_of(objects, N, bases, 16);
  CHECK(k >= 3 && k <= 4, "%d chunks for three chunks' worth", k);
  release(objects, 0, N, 2);
  fill(more, N / 2);
  int outside = 0;
  for (int i = 0; i < N / 2; i++) outside += !in_chunks(more[i], bases, k);
  CHECK(outside == 0, "%d of %d objects outside the chunks the first ones filled", outside, N / 2);
  release(objects, 1, N, 2);
  release(more, 0, N / 2, 1);
}

/* What another thread does with objects[0..n): fill it, or free it all. */
typedef struct { int n; } batch_t;

static void *fill_batch(void *arg)
{
  fill(objects, ((batch_t *)arg)->n);
  return NULL;
}

static void *release_batch(void *arg)
{
  release(objects, 0, ((batch_t *)arg)->n, 1);
  return NULL;
}

/* fn(arg) on a thread of its own, which has exited on return. */
static void in_thread(void *(*fn)(void *), void *arg)
{
  pthread_t t;
  pthread_create(&t, NULL, fn, arg);
  pthread_join(t, NULL);
}

static void *after_handoff(void *arg)
{
  (void)arg;
  fill(more, 1);
  CHECK(chunk_of(more[0]) == chunk_of(objects[SOME - 1]),
        "the next thread's first object %p is not in the exited thread's chunk (its last object %p)",
        more[0], objects[SOME - 1]);
  release(objects, 0, SOME, 1);
  release(more, 0, 1, 1);
  return NULL;
}

static void handoff(void)
{
  in_thread(fill_batch, &(batch_t){SOME});
  in_thread(after_handoff, NULL);
}

static void remote(void)
{
  uintptr_t bases[16];
  fill(objects, N);
  int k = chunks_of(objects, N, bases, 16);
  in_thread(release_batch, &(batch_t){N});
  fill(more, N);
  int outside = 0;
  for (int i = 0; i < N; i++) outside += !in_chunks(more[i], bases, k);
  CHECK(outside == 0, "%d of %d objects outside the chunks the first ones filled", outside, N);
  release(more, 0, N, 1);
}

static void producer(void)
{
  for (int round = 0; round < 3; round++) {        /* 12,000 drained: more than half of any chunk */
    fill(objects, ROUND);
    in_thread(release_batch, &(batch_t){ROUND});
  }
  fill(objects, 2 * (int)(CHUNK / SIZE));
  in_thread(release_batch, &(batch_t){2 * (int)(CHUNK / SIZE)});
}

static void *adopt_and_fill(void *arg)
{
  (void)arg;
  release(objects, 0, BEFORE - 1, 1);
  fill(more, 2 * (int)(CHUNK / SIZE));
  CHECK(chunk_of(more[0]) == chunk_of(objects[BEFORE - 1]), "the first object %p is not in the adopted chunk", more[0]);
  release(more, 0, 2 * (int)(CHUNK / SIZE), 1);
  release(objects, BEFORE - 1, BEFORE, 1);
  return NULL;
}

static void adopted(void)
{
  in_thread(fill_batch, &(batch_t){BEFORE});
  in_thread(adopt_and_fill, NULL);
}

#define MANY (8 * (int)(CHUNK / SIZE))
static void *many_objects[MANY];

static void many(void)
{
  uintptr_t bases[16];
  fill(many_objects, MANY);
  int k = chunks_of(many_objects, MANY, bases, 16);
  CHECK(k >= 8 && k < 16, "%d chunks for eight chunks' worth", k);
  printf("chunks %d\n", k);
  release(many_objects, 0, MANY, 1);
}

/* A thread with a heap of its own that lives while `many` runs. */
static pthread_barrier_t busy;

static void *stay_busy(void *arg)
{
  (void)arg;
  fill(more, 1);
  pthread_barrier_wait(&busy);       /* its heap exists */
  pthread_barrier_wait(&busy);       /* many has counted */
  release(more, 0, 1, 1);
  return NULL;
}

static void many_busy(void)
{
  pthread_t t;
  pthread_barrier_init(&busy, NULL, 2);
  pthread_create(&t, NULL, stay_busy, NULL);
  pthread_barrier_wait(&busy);
  many();
  pthread_barrier_wait(&busy);
  pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "refill") == 0) refill();
  else if (strcmp(mode, "handoff") == 0) handoff();
  else if (strcmp(mode, "remote") == 0) remote();
  else if (strcmp(mode, "producer") == 0) producer();
  else if (strcmp(mode, "adopted") == 0) adopted();
  else if (strcmp(mode, "many") == 0) many();
  else if (strcmp(mode, "many-busy") == 0) many_busy();
  else CHECK(0, "unknown mode %s", mode);
  return core_summary();
}
