/* Two lists whose nodes are made in turn (a b a b ...), from two call
 * sites, the same size, never pointing at each other. Each round walks the
 * two lists in lockstep LOCK times, then each list alone SOLO times: the
 * lockstep walks make the two kinds affine, so a plan groups them, and one group of
 * one size class keeps them interleaved as they were made. A pool per call
 * site (dynamic mode) keeps each list dense, which the solo walks prefer.
 *
 * usage: lockstep NODES ROUNDS LOCK SOLO       prints a checksum
 */
#include <stdio.h>
#include <stdlib.h>

struct node {
  struct node *next;
  long value;
  long pad[2];
};

__attribute__((noinline)) static struct node *make_a(long v)
{
  struct node *n = malloc(sizeof *n);
  n->value = v;
  return n;
}

__attribute__((noinline)) static struct node *make_b(long v)
{
  struct node *n = malloc(sizeof *n);
  n->value = 3 * v + 1;
  return n;
}

static long walk(const struct node *n)
{
  long sum = 0;
  for (; n; n = n->next) sum += n->value;
  return sum;
}

int main(int argc, char **argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: lockstep NODES ROUNDS LOCK SOLO\n");
    return 2;
  }
  long nodes = atol(argv[1]), rounds = atol(argv[2]), lock = atol(argv[3]), solo = atol(argv[4]);
  struct node *a = NULL, *b = NULL, **ta = &a, **tb = &b;
  for (long i = 0; i < nodes; i++) {
    *ta = make_a(i);
    ta = &(*ta)->next;
    *tb = make_b(i);
    tb = &(*tb)->next;
  }
  *ta = *tb = NULL;
  unsigned long checksum = 0;
  for (long r = 0; r < rounds; r++) {
    for (long l = 0; l < lock; l++)
      for (const struct node *p = a, *q = b; p && q; p = p->next, q = q->next)
        checksum = checksum * 31 + (unsigned long)(p->value ^ q->value);
    for (long s = 0; s < solo; s++) checksum += (unsigned long)walk(a) + (unsigned long)walk(b);
  }
  printf("checksum %016lx\n", checksum);
  while (a) {
    struct node *n = a->next;
    free(a);
    a = n;
  }
  while (b) {
    struct node *n = b->next;
    free(b);
    b = n;
  }
  return 0;
}
