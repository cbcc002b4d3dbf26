/* Dynamic mode stepping aside (docs/dynamic.md, "Stepping aside"): every
 * object comes through one allocation wrapper, as an interpreter's do, and
 * dies before the next is made, so that each context's pool is given back
 * as too small; then the program goes on allocating the same way for a
 * long while. With `realloc` every object is made by realloc of NULL, as
 * Lua's allocator makes them; with `keep`, a list that keeps growing has a
 * pool in use throughout. A third argument runs that many more rounds
 * in `settled`, after the rest, for a callgrind that collects only
 * there; with `late`, a third scratch context starts at round 4000, after
 * the first window's start and before its end; with `built`, the list is
 * made first and then only read, its pool in use but making nothing; with
 * `sparse`, the list's first 300 nodes are made first and then it grows
 * by a node every 64th round, too rarely for its samples alone to tell;
 * `trickle` is the same with a node every 2048th round, one in 4096
 * forwarded requests, too few to pay for their lookups; with `other`, a
 * second thread grows a list of its own, first by 300 nodes, then by a
 * node for each round of the main thread's, which forwards, so that only
 * the pool's samples show it; with
 * `direct`, the list is built first by a direct malloc call of its own
 * (which dynamic mode points at its pool's slot), then only read while the
 * scratch objects come and go, then grown by 5,000 more nodes in
 * grow_late, after dynamic mode has stepped aside. Prints a checksum, the
 * same with corral or without, after freeing the list (pooled nodes among
 * them), and the protection of the page that holds the program's own PLT
 * slot of malloc: read-only where the loader made it so (-z now), with
 * corral as without, even once dynamic mode has pointed the slot past it
 * (docs/dynamic.md, "Stepping aside"), and what malloc(SIZE_MAX) sets
 * errno to. With `dlopen`, a fourth argument
 * names a library (dyn_back_off_lib.c) opened after the rounds, whose
 * scratch function is called that many more rounds. With `threads`, four
 * threads run the scratch rounds at once (dynamic mode steps aside, and
 * points the slots, while the others go on calling through them), then a
 * forked child runs more and the parent adds the child's sum. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))

static int by_realloc;
static void *volatile none;        /* realloc(NULL, n) the compiler cannot turn into malloc(n) */

NOIPA void *xmalloc(size_t n) {
  void *p = by_realloc ? realloc(none, n) : malloc(n);
  if (!p) abort();
  return p;
}

struct node { struct node *next; long value; };

NOIPA long scratch_a(long i) {
  long *p = xmalloc(48);
  p[0] = i;
  long v = p[0] * 3;
  free(p);
  return v;
}

NOIPA long scratch_b(long i) {
  long *p = xmalloc(32);
  p[1] = i;
  long v = p[1] + 1;
  free(p);
  return v;
}

NOIPA long scratch_c(long i) {
  long *p = xmalloc(64);
  p[2] = i;
  long v = p[2] - 1;
  free(p);
  return v;
}

NOIPA struct node *grow(struct node *list, long i) {
  struct node *n = xmalloc(sizeof *n);
  n->next = list;
  n->value = i;
  return n;
}

NOIPA struct node *grow_direct(struct node *list, long i) {
  struct node *n = malloc(sizeof *n);
  if (!n) abort();
  n->next = list;
  n->value = i;
  return n;
}

NOIPA struct node *grow_late(struct node *list) {
  for (long i = 0; i < 5000; i++) list = grow_direct(list, i);
  return list;
}

NOIPA long settled(long rounds) {
  long sum = 0;
  for (long i = 0; i < rounds; i++) sum += scratch_a(i) + scratch_b(i);
  return sum;
}

/* The GOT slot this program's calls of malloc jump through: its PLT
 * entry is `jmp *disp(%rip)`, after endbr64 and a bnd prefix where built
 * for CET. 0 when it is not that. */
static uintptr_t malloc_slot(void) {
  const unsigned char *t;
  __asm__("leaq malloc@PLT(%%rip), %0" : "=r"(t));
  if (t[0] == 0xf3 && t[1] == 0x0f && t[2] == 0x1e && t[3] == 0xfa) t += 4;
  if (t[0] == 0xf2) t++;
  if (t[0] != 0xff || t[1] != 0x25) return 0;
  int32_t disp;
  memcpy(&disp, t + 2, 4);
  return (uintptr_t)(t + 6 + disp);
}

/* "r--p", "rw-p", ...: the mapping of /proc/self/maps that holds a. */
static void print_protection_of(uintptr_t a) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512], perms[8], found[8] = "none";
  unsigned long lo, hi;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
      strcpy(found, perms);
      break;
    }
  if (f) fclose(f);
  printf("malloc's slot: %s\n", a ? found : "no PLT entry");
}

/* The library's scratch rounds (dyn_back_off_lib.c), after the rest. */
static long rounds_in_library(const char *path, long rounds) {
  void *lib = dlopen(path, RTLD_NOW);
  long (*scratch)(long) = lib ? (long (*)(long))dlsym(lib, "lib_scratch") : NULL;
  if (!scratch) {
    fprintf(stderr, "dyn_back_off: cannot load %s\n", path);
    exit(2);
  }
  long sum = 0;
  for (long i = 0; i < rounds; i++) sum += scratch(i);
  return sum;
}

static void *thread_rounds(void *arg) {
  long rounds = *(long *)arg, sum = 0;
  for (long i = 0; i < rounds; i++) sum += scratch_a(i) + scratch_b(i);
  *(long *)arg = sum;
  return NULL;
}

/* `other`: 300 nodes before the main thread's rounds start (its pool
 * exists by then), a node for each round it posts, the main thread
 * waiting for it to catch up every 64 rounds (else the scheduler could
 * leave it behind for a whole window), then the sum of the list, freed. */
static sem_t round_done, other_started, other_caught_up;
static long other_rounds;

static void *other_list(void *arg) {
  struct node *list = NULL;
  long sum = 0;
  for (long i = 0; i < 300; i++) list = grow(list, -i);
  sem_post(&other_started);
  for (long i = 0; i < other_rounds; i++) {
    while (sem_wait(&round_done) != 0) continue;
    list = grow(list, i);
    if (i % 64 == 63) sem_post(&other_caught_up);
  }
  while (list) {
    struct node *next = list->next;
    sum += list->value;
    free(list);
    list = next;
  }
  *(long *)arg = sum;
  return NULL;
}

/* Four threads' scratch rounds, then a child's; the sum of all. */
static long rounds_in_threads(long rounds) {
  pthread_t t[4];
  long arg[4], sum = 0;
  for (int k = 0; k < 4; k++) {
    arg[k] = rounds;
    if (pthread_create(&t[k], NULL, thread_rounds, &arg[k]) != 0) exit(2);
  }
  for (int k = 0; k < 4; k++) {
    pthread_join(t[k], NULL);
    sum += arg[k];
  }
  int fds[2];
  if (pipe(fds) != 0) exit(2);
  pid_t child = fork();
  if (child == 0) {
    long got = settled(rounds);
    _exit(write(fds[1], &got, sizeof got) == sizeof got ? 0 : 3);
  }
  long got = 0;
  int status = 0;
  if (child < 0 || read(fds[0], &got, sizeof got) != sizeof got || waitpid(child, &status, 0) != child ||
      status != 0)
    exit(2);
  return sum + got;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "drop";
  int keep = !strcmp(mode, "keep"), late = !strcmp(mode, "late"), trickle = !strcmp(mode, "trickle");
  int sparse = !strcmp(mode, "sparse") || trickle;
  int direct = !strcmp(mode, "direct");
  by_realloc = !strcmp(mode, "realloc");
  long rounds = argc > 2 ? atol(argv[2]) : 400000, sum = 0;
  struct node *list = NULL;
  if (!strcmp(mode, "built") || sparse)      /* sparse: its pool exists before the rest starts */
    for (long i = 0; i < (sparse ? 300 : rounds / 4); i++) list = grow(list, i);
  if (direct)
    for (long i = 0; i < rounds / 4; i++) list = grow_direct(list, i);
  int threads = !strcmp(mode, "threads");      /* its rounds run in the threads only */
  pthread_t other;
  long other_sum = 0;
  if (!strcmp(mode, "other")) {
    other_rounds = rounds;
    if (sem_init(&round_done, 0, 0) != 0 || sem_init(&other_started, 0, 0) != 0 ||
        sem_init(&other_caught_up, 0, 0) != 0 ||
        pthread_create(&other, NULL, other_list, &other_sum) != 0)
      exit(2);
    while (sem_wait(&other_started) != 0) continue;
  }
  for (long i = 0; i < (threads ? 0 : rounds); i++) {
    sum += scratch_a(i) + scratch_b(i);
    if (other_rounds) {
      sem_post(&round_done);
      if (i % 64 == 63)
        while (sem_wait(&other_caught_up) != 0) continue;
    }
    if (late && i >= 4000) sum += scratch_c(i);
    if ((keep && i % 4 == 0) || (sparse && i % (trickle ? 2048 : 64) == 0)) list = grow(list, i);
  }
  if (other_rounds) {
    pthread_join(other, NULL);
    sum += other_sum;
  }
  if (direct) list = grow_late(list);
  for (struct node *n = list; n; n = n->next) sum += n->value;
  if (argc > 3) sum += settled(atol(argv[3]));
  if (!strcmp(mode, "dlopen") && argc > 4) sum += rounds_in_library(argv[4], atol(argv[3]));
  if (threads) sum += rounds_in_threads(rounds);
  while (list) {
    struct node *next = list->next;
    free(list);
    list = next;
  }
  printf("sum %ld\n", sum);
  print_protection_of(malloc_slot());
  /* C says a failed malloc sets ENOMEM; mimalloc does not past PTRDIFF_MAX,
   * and corral sets it there, before stepping aside and after. */
  volatile size_t absurd = SIZE_MAX;
  errno = 0;
  void *volatile none_at_all = malloc(absurd);
  printf("malloc(SIZE_MAX): %s\n", !none_at_all && errno == ENOMEM ? "NULL, ENOMEM" : "errno not set");
  return 0;
}
