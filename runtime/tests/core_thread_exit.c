/* Threads that allocate and exit: their current chunks must be handed back
 * (retired) at exit, so that once main frees the objects the chunks are
 * released. 16 threads one after another, 2000 objects of 64 bytes each. */
#include "core_check.h"

#include <pthread.h>

#define THREADS 16
#define OBJECTS 2000

static void *objects[THREADS][OBJECTS];

static void *worker(void *arg)
{
  void **mine = arg;
  for (int i = 0; i < OBJECTS; i++) mine[i] = malloc(64);
  return NULL;
}

int main(void)
{
  for (int t = 0; t < THREADS; t++) {
    pthread_t th;
    pthread_create(&th, NULL, worker, objects[t]);
    pthread_join(th, NULL);
  }
  int grouped = 0;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < OBJECTS; i++) {
      grouped += group_of(objects[t][i]) >= 0;
      free(objects[t][i]);
    }
  CHECK(grouped == THREADS * OBJECTS, "grouped %d", grouped);
  return core_summary();
}
