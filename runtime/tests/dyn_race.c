/* Four threads meet one new call site at once and run the same scratch
 * loop there (each buffer freed before the next is made), for the race
 * windows the debug build widens (CORRAL_DEBUG_WIDEN): the site's context
 * is found by the other threads the moment one interns it, and its pool,
 * given back as small by whichever thread made it, is about to be made by
 * the others, which counted their way to it before the give-back. Prints
 * a hash of the buffers' contents. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 20000

static int started;
static unsigned long hash[THREADS];

static void *scratch_loop(void *arg) {
  unsigned long *h = arg;
  while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) {}
  for (long i = 0; i < ROUNDS; i++) {
    char *s = malloc(40);
    snprintf(s, 40, "item %ld", i);
    for (char *c = s; *c; c++) *h = *h * 31 + (unsigned char)*c;
    free(s);
  }
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, scratch_loop, &hash[i]);
  __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
  unsigned long all = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    all ^= hash[i];
  }
  printf("hash %lu\n", all);
  return 0;
}
