/* Threads and fork under dynamic mode: 4 threads build lists through one
 * wrapper (one shared context, pooled and sampled concurrently), free each
 * other's nodes, then the process forks and the child allocates through the
 * same contexts. stdout: checksums (identical with and without corral);
 * stderr: "pooled=K" (nodes of the last round that corral pooled). */
#include "../include/corral.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))
#define THREADS 4
#define NODES 20000

struct node { struct node *next; long value; };

static struct node *lists[THREADS];

NOIPA void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) abort();
  return p;
}

NOIPA struct node *push(struct node *head, long v) {
  struct node *p = xmalloc(sizeof *p);
  p->next = head;
  p->value = v;
  return p;
}

static void *build(void *arg) {
  long id = (long)arg;
  for (int round = 0; round < 3; round++) {
    struct node *head = NULL;
    for (long i = 0; i < NODES; i++) head = push(head, i ^ id);
    __atomic_store_n(&lists[id], head, __ATOMIC_RELEASE);
    /* free the neighbour's previous list: cross-thread frees */
    struct node *other = __atomic_exchange_n(&lists[(id + 1) % THREADS], NULL, __ATOMIC_ACQ_REL);
    while (other) { struct node *next = other->next; free(other); other = next; }
  }
  return NULL;
}

static long checksum_and_free(void) {
  long sum = 0;
  for (int t = 0; t < THREADS; t++) {
    struct node *p = lists[t];
    while (p) { struct node *next = p->next; sum += p->value; free(p); p = next; }
    lists[t] = NULL;
  }
  return sum;
}

int main(void) {
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, build, (void *)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  /* whatever survives the cross-frees is freed here */
  long sum = checksum_and_free();
  printf("threads done\n");
  fflush(stdout);

  pid_t pid = fork();
  if (pid == 0) {
    struct node *head = NULL;
    for (long i = 0; i < NODES; i++) head = push(head, i);
    int pooled = 0;
    long csum = 0;
    for (struct node *p = head; p; p = p->next) { csum += p->value; pooled += corral_group_of_if_loaded(p) >= 0; }
    fprintf(stderr, "child pooled=%d\n", pooled);
    printf("child %ld\n", csum);
    fflush(stdout);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  struct node *head = NULL;
  int pooled = 0;
  for (long i = 0; i < NODES; i++) head = push(head, i);
  for (struct node *p = head; p; p = p->next) pooled += corral_group_of_if_loaded(p) >= 0;
  fprintf(stderr, "parent pooled=%d\n", pooled);
  printf("parent child_status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  (void)sum;
  return 0;
}
