/* One allocation in the source, three calls in the binary: make() calls
 * malloc in each case of a switch (built -O0, so they stay three calls),
 * and the input decides which cases run: `unseen_copies N K R` makes N
 * list nodes of kinds 0..K-1 in turn. make() also calls label(), which is
 * no copy of the allocation. Between nodes, main keeps a record of the
 * same size that nothing reads again, so a pool of the nodes packs what
 * the allocator underneath interleaves. The list is walked R times and
 * the sum printed as a checksum. A plan trained with K = 2 never saw the
 * third call; on K = 3 a third of the nodes come from it. */
#include <stdio.h>
#include <stdlib.h>

struct node {
  struct node *next;
  long value;
  long kind;
};

/* A call in make() to something other than malloc: never a copy. */
__attribute__((noinline)) static void label(struct node *n, int kind)
{
  n->kind = kind;
}

__attribute__((noinline)) static struct node *make(int kind)
{
  struct node *n;
  switch (kind) {
  case 0:
    n = malloc(sizeof *n);
    n->value = 1;
    break;
  case 1:
    n = malloc(sizeof *n);
    n->value = 2;
    break;
  default:
    n = malloc(sizeof *n);
    n->value = 3;
    break;
  }
  label(n, kind);
  return n;
}

int main(int argc, char **argv)
{
  long count = argc > 1 ? atol(argv[1]) : 1000, kinds = argc > 2 ? atol(argv[2]) : 3;
  long rounds = argc > 3 ? atol(argv[3]) : 20;
  struct node *head = NULL, **tail = &head;
  void **kept = malloc(count * sizeof *kept);
  for (long i = 0; i < count; i++) {
    struct node *n = make((int)(i % kinds));
    n->next = NULL;
    *tail = n;
    tail = &n->next;
    kept[i] = malloc(sizeof(struct node));
  }
  unsigned long sum = 0;
  for (long r = 0; r < rounds; r++)
    for (struct node *n = head; n; n = n->next) sum = sum * 31 + (unsigned long)(n->value + n->kind);
  printf("checksum %lx\n", sum);
  return 0;
}
