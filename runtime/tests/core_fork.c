/* fork from a threaded program while other threads allocate: the child
 * allocates and frees (every small object still grouped, under
 * CORRAL_RANDOM_POOLS), frees what the parent made before the fork, starts
 * a thread of its own that does the same, then exits cleanly. */
#include "core_check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static void *churn(void *arg)
{
  (void)arg;
  void *keep[256] = { 0 };
  unsigned i = 0;
  while (!atomic_load(&stop)) {
    free(keep[i % 256]);
    keep[i % 256] = malloc(16 + (i * 37) % 2000);
    i++;
  }
  for (i = 0; i < 256; i++) free(keep[i]);
  return NULL;
}

/* 0, or what went wrong: 2 no memory, 3 not grouped, 4 contents. */
static int child_rounds(void)
{
  unsigned char *p[1000];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 1000; i++) {
      p[i] = malloc(8 + (size_t)(i % 300));
      if (!p[i]) return 2;
      if (group_of(p[i]) < 0) return 3;
      memset(p[i], i, 8);
    }
    for (int i = 0; i < 1000; i++) {
      if (p[i][7] != (unsigned char)i) return 4;
      free(p[i]);
    }
  }
  return 0;
}

static void *child_thread(void *result)
{
  *(int *)result = child_rounds();
  return NULL;
}

static int child_work(unsigned char *from_parent)
{
  if (from_parent[0] != 0x5a || group_of(from_parent) < 0) return 5;
  free(from_parent);
  int own = child_rounds(), other = -1;
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, &other) != 0) return 6;
  pthread_join(t, NULL);
  return own ? own : other;
}

int main(void)
{
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn, NULL);
  for (int k = 0; k < 20; k++) {
    unsigned char *made_before = malloc(40);
    memset(made_before, 0x5a, 40);
    pid_t pid = fork();
    if (pid == 0) _exit(child_work(made_before));
    free(made_before);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %#x", k, status);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  return core_summary();
}
