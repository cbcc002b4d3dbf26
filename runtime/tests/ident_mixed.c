/* Frames the frame-pointer walk cannot follow (test_identify_frames.py),
 * in a program built with frame pointers:
 *   driver_lib -> lib_call_with_garbage_rbp (library without frame pointers,
 *                 rbp = -16) -> allocate               group 0
 *   driver_own -> own_garbage_rbp (this program, built without a frame
 *                 pointer, rbp = -16) -> allocate        group 0
 *   main -> allocate                                       ungrouped
 * and threads doing the same, each on its own stack. */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <pthread.h>
#include <stdlib.h>

void lib_call_with_garbage_rbp(void (*callback)(int), int n);

static int expected_now;

__attribute__((noipa)) void allocate(int i)
{
  void *p = malloc(16 + (size_t)(i & 63));
  ident_expect(p, expected_now);
  free(p);
}

__attribute__((noipa, optimize("omit-frame-pointer"))) void own_garbage_rbp(void (*callback)(int), int n)
{
  for (int i = 0; i < n; i++) {
    __asm__ __volatile__("movq $-16, %%rbp" ::: "rbp");
    callback(i);
  }
}

/* The volatile store after each call keeps it from becoming a tail call
 * (which would take the driver off the stack). */
static volatile int calls_done;
__attribute__((noipa)) void driver_lib(int n) { lib_call_with_garbage_rbp(allocate, n); calls_done++; }
__attribute__((noipa)) void driver_own(int n) { own_garbage_rbp(allocate, n); calls_done++; }

/* Five more functions with frame pointers, so that 90% of this program's
 * framed functions keep them and corral walks it by frame pointer (see
 * docs/identification.md): own_garbage_rbp is then the exception whose bad
 * rbp must send the walk to its CFI rule. */
#define FRAMED(k) \
  __attribute__((noipa)) int framed##k(int x) { int r = x > 0 ? framed##k(x - 1) : 0; calls_done++; return r + k; }
FRAMED(1) FRAMED(2) FRAMED(3) FRAMED(4) FRAMED(5)

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

/* Threads check under one lock: ident_expect counts in plain globals. */
static void *thread_main(void *arg)
{
  (void)arg;
  for (int round = 0; round < 50; round++) {
    pthread_mutex_lock(&check_lock);
    expected_now = 0;
    driver_lib(20);
    driver_own(20);
    pthread_mutex_unlock(&check_lock);
  }
  return NULL;
}

int main(void)
{
  if (framed1(1) + framed2(1) + framed3(1) + framed4(1) + framed5(1) != 30) return 2;
  expected_now = 0;
  driver_lib(1000);
  driver_own(1000);
  expected_now = -1;
  for (int i = 0; i < 1000; i++) allocate(i);
  pthread_t threads[4];
  for (int t = 0; t < 4; t++) pthread_create(&threads[t], NULL, thread_main, NULL);
  for (int t = 0; t < 4; t++) pthread_join(threads[t], NULL);
  return ident_report();
}
