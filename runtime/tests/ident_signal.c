/* Signal handlers that allocate (test_identify_signals.py): on the thread's
 * own stack and on sigaltstack, in the main thread and in threads, raised
 * synchronously between the program's own allocations. The plan:
 *   in_handler -> allocate -> malloc        group 0 (a clause two frames deep)
 *   direct_alloc -> malloc                  group 1 (frame 0 decides)
 *   anything else -> allocate -> malloc     ungrouped
 * Built with -DGETATTR_FAILS, pthread_getattr_np fails: threads have no
 * stack bounds, so no walk is safe there and group 0 is never chosen in
 * them; frame 0 still decides. The initial thread's bounds come from the
 * loader and the stack limit, not from glibc, and its walks go on.
 * A makecontext coroutine allocates too, in a thread and then in the
 * initial thread: its stack is neither the thread's nor an alternate
 * signal stack, so it is not walked (ungrouped), past the runtime's budget
 * of sigaltstack queries for such a thread. */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#ifdef GETATTR_FAILS
int pthread_getattr_np(pthread_t thread, pthread_attr_t *attr)
{
  (void)thread;
  (void)attr;
  return ENOSYS;
}
static const int threads_deep_group = -1;
#else
static const int threads_deep_group = 0;
#endif
static int deep_group;                /* this round's thread's: 0 in the initial thread */

#define KEPT 64
static volatile int calls_done;
static void *kept[KEPT];              /* made in one context, freed in another */
static unsigned kept_next;
static unsigned bad_contents;

__attribute__((noipa)) void *allocate(size_t n) { void *p = malloc(n); calls_done++; return p; }
__attribute__((noipa)) void *in_handler(void) { void *p = allocate(40); calls_done++; return p; }
__attribute__((noipa)) void *direct_alloc(void) { void *p = malloc(56); calls_done++; return p; }

static void keep(void *p, unsigned char fill, size_t n)
{
  memset(p, fill, n);
  unsigned char *old = kept[kept_next % KEPT];
  if (old && old[0] != old[1]) bad_contents++;
  free(old);
  kept[kept_next++ % KEPT] = p;
}

/* Runs on whichever stack its signal was set up for. */
static void handler(int sig)
{
  (void)sig;
  void *deep = in_handler(), *direct = direct_alloc(), *other = allocate(24);
  ident_expect(deep, deep_group);
  ident_expect(direct, 1);
  ident_expect(other, -1);
  keep(deep, 0x11, 40);
  keep(direct, 0x22, 56);
  free(other);
}

/* Both signals on this thread: SIGUSR1 on a fresh alternate stack, SIGUSR2
 * on the thread's own stack. The program's own allocations in between. */
static void rounds(int n)
{
  stack_t alt = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0 };
  sigaltstack(&alt, NULL);
  for (int i = 0; i < n; i++) {
    pthread_kill(pthread_self(), SIGUSR1);
    pthread_kill(pthread_self(), SIGUSR2);
    void *mine = in_handler(), *plain = allocate(32);
    ident_expect(mine, deep_group);
    ident_expect(plain, -1);
    keep(mine, 0x33, 40);
    free(plain);
  }
  stack_t off = { .ss_flags = SS_DISABLE };
  sigaltstack(&off, NULL);
  free(alt.ss_sp);
}

static ucontext_t coroutine, back;

static void coroutine_main(void)
{
  for (int i = 0; i < 100; i++) {
    void *deep = in_handler(), *direct = direct_alloc();
    ident_expect(deep, -1);
    ident_expect(direct, 1);
    keep(deep, 0x44, 40);
    keep(direct, 0x55, 56);
  }
}

static void run_coroutine(void)
{
  static char stack[1 << 16] __attribute__((aligned(16)));
  getcontext(&coroutine);
  coroutine.uc_stack.ss_sp = stack;
  coroutine.uc_stack.ss_size = sizeof stack;
  coroutine.uc_link = &back;
  makecontext(&coroutine, coroutine_main, 0);
  swapcontext(&back, &coroutine);
}

static void *coroutine_thread(void *arg)
{
  (void)arg;
  run_coroutine();
  return NULL;
}

/* The handler counts in plain globals: one thread at a time. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static void *thread_main(void *arg)
{
  (void)arg;
  for (int r = 0; r < 20; r++) {
    pthread_mutex_lock(&one_at_a_time);
    deep_group = threads_deep_group;
    rounds(10);
    pthread_mutex_unlock(&one_at_a_time);
  }
  return NULL;
}

int main(void)
{
  ident_expect(NULL, -1);             /* looks corral_group_of up before any handler runs */
  struct sigaction on_alt = { .sa_handler = handler, .sa_flags = SA_ONSTACK };
  struct sigaction on_own = { .sa_handler = handler, .sa_flags = 0 };
  sigemptyset(&on_alt.sa_mask);
  sigemptyset(&on_own.sa_mask);
  sigaction(SIGUSR1, &on_alt, NULL);
  sigaction(SIGUSR2, &on_own, NULL);
  pthread_mutex_lock(&one_at_a_time);
  deep_group = 0;
  rounds(500);
  pthread_mutex_unlock(&one_at_a_time);
  pthread_t threads[3];
  for (int t = 0; t < 3; t++) pthread_create(&threads[t], NULL, thread_main, NULL);
  for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
  /* in a thread of its own: a thread that allocated from such stacks stops
   * asking for its alternate signal stack (docs/identification.md) */
  pthread_create(&threads[0], NULL, coroutine_thread, NULL);
  pthread_join(threads[0], NULL);
  /* and in the initial thread, whose bounds come from the loader: the
   * coroutine's stack lies outside them, and is not walked either */
  run_coroutine();
  for (unsigned i = 0; i < KEPT; i++) {
    unsigned char *p = kept[i];
    if (p && p[0] != p[1]) bad_contents++;
    free(p);
  }
  if (bad_contents) printf("bad contents %u\n", bad_contents);
  return ident_report() || bad_contents;
}
