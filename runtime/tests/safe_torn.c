/* Safe mode points a site's call at its slot stub on the site's first
 * request, while two more threads run the same call and a fourth keeps
 * forking children that run it too. PAD nops before the call let the test
 * put the call's displacement across two aligned words, where no single
 * store can replace it: the runtime then holds arriving threads in a
 * self-loop while it writes the call, and no fork may copy that loop.
 * argv[1]: the offset of the displacement from torn_loop (the test reads it
 * with objdump). Prints whether the call now leads elsewhere, whether every
 * thread's sum is right and how many children failed (stderr: how many
 * ran).
 * A thread caught in the loop for good ends the run by SIGALRM, a child
 * caught there its own life. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PAD
#define PAD 0
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define THREADS 3
#define ROUNDS 20000L
#define CHILD_ROUNDS 100L

static int started, stop;

struct run { long rounds, sum; };

static long expected(long rounds) { return 3 * rounds * (rounds - 1) / 2; }

__attribute__((noipa)) void *torn_loop(void *arg)
{
  struct run *r = arg;
  while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) {}
  for (long i = 0; i < r->rounds; i++) {
    __asm__ volatile(".rept " STR(PAD) "\n nop\n .endr");
    long *p = malloc(48);
    p[0] = i;
    p[5] = 2 * i;
    __asm__ volatile("" : : "r"(p) : "memory");     /* the block is used: the pair stays */
    r->sum += p[0] + p[5];
    free(p);
  }
  return NULL;
}

struct forks { long children, failed; };

static void *forker(void *arg)
{
  struct forks *f = arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) || f->children < 3) {
    pid_t pid = fork();
    if (pid == 0) {
      struct run r = {CHILD_ROUNDS, 0};
      alarm(10);                                  /* caught in a copied self-loop: killed, counted failed */
      started = 1;
      torn_loop(&r);
      _exit(r.sum == expected(CHILD_ROUNDS) ? 0 : 1);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) f->failed++;
    __atomic_add_fetch(&f->children, 1, __ATOMIC_RELEASE);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc < 2) return 2;
  alarm(30);
  const uint8_t *disp = (const uint8_t *)(uintptr_t)torn_loop + strtol(argv[1], NULL, 0);
  int32_t before, after;
  memcpy(&before, disp, 4);
  pthread_t t[THREADS], fork_thread;
  struct run r[THREADS];
  struct forks f = {0, 0};
  for (int i = 0; i < THREADS; i++) {
    r[i] = (struct run){ROUNDS, 0};
    pthread_create(&t[i], NULL, torn_loop, &r[i]);
  }
  pthread_create(&fork_thread, NULL, forker, &f);
  while (__atomic_load_n(&f.children, __ATOMIC_ACQUIRE) < 2) {}   /* forking when the call is patched */
  __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
  int sums_right = 1;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    sums_right &= r[i].sum == expected(ROUNDS);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(fork_thread, NULL);
  memcpy(&after, disp, 4);
  printf("pointed elsewhere: %s\nsums: %s\nchildren failed: %ld\n", after != before ? "yes" : "no",
         sums_right ? "right" : "wrong", f.failed);
  fprintf(stderr, "children: %ld\n", f.children);
  return 0;
}
