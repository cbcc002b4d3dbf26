/* Tables republished under running threads (test_plan_dlopen.py): four
 * threads allocate through the planned plugin while the main thread dlopens
 * and dlcloses another library 50 times, each dlopen rebuilding corral's
 * module table and lookup tables. Usage: plan_dlopen_threads PLUGIN OTHER */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <pthread.h>
#include <stdlib.h>

static void *(*plugin_alloc)(size_t);
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static void *worker(void *arg)
{
  (void)arg;
  while (!stop) {
    void *p = plugin_alloc(40);
    pthread_mutex_lock(&check_lock);       /* ident_expect counts in plain globals */
    ident_expect(p, 0);
    pthread_mutex_unlock(&check_lock);
    free(p);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc != 3) return 2;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) return 2;
  plugin_alloc = (void *(*)(size_t))dlsym(h, "plugin_alloc");
  pthread_t threads[4];
  for (int t = 0; t < 4; t++) pthread_create(&threads[t], NULL, worker, NULL);
  for (int i = 0; i < 50; i++) {
    void *other = dlopen(argv[2], RTLD_NOW);
    if (!other) return 2;
    dlclose(other);
  }
  stop = 1;
  for (int t = 0; t < 4; t++) pthread_join(threads[t], NULL);
  return ident_report();
}
