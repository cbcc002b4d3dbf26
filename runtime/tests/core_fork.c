/* fork from a threaded program while other threads allocate: the child
 * allocates and frees (grouped and not), then exits cleanly. */
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

static int child_work(void)
{
  void *p[1000];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 1000; i++) {
      p[i] = malloc(8 + (size_t)(i % 300));
      if (!p[i]) return 2;
      memset(p[i], i, 8);
    }
    for (int i = 0; i < 1000; i++) free(p[i]);
  }
  return 0;
}

int main(void)
{
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn, NULL);
  for (int k = 0; k < 20; k++) {
    pid_t pid = fork();
    if (pid == 0) _exit(child_work());
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %#x", k, status);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  return core_summary();
}
