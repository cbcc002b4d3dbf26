/* Dynamic mode's judgement of small live sets (docs/dynamic.md, "When a
 * context gets a pool"): one context makes scratch buffers that die before
 * the next is made (a live set of one object), another builds a list that
 * starts small and keeps growing. The scratch pool is given back; the
 * list's pool stays, though its first samples saw it under a page.
 * Prints where the last objects of each landed. */
#include "../include/corral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define ROUNDS 200000

struct node { struct node *next; long value; };

NOIPA char *scratch(size_t n) { return malloc(n); }

NOIPA struct node *make_node(struct node *next, long v) {
  struct node *n = malloc(sizeof *n);
  n->next = next;
  n->value = v;
  return n;
}

int main(void) {
  struct node *list = NULL;
  unsigned long hash = 0;
  int scratch_pooled = 0, list_pooled = 0;
  for (long i = 0; i < ROUNDS; i++) {
    char *s = scratch(40);
    snprintf(s, 40, "item %ld", i);
    for (char *c = s; *c; c++) hash = hash * 31 + (unsigned char)*c;
    if (i >= ROUNDS - 100) scratch_pooled += corral_group_of_if_loaded(s) >= 0;
    free(s);
    list = make_node(list, i);
    if (i >= ROUNDS - 100) list_pooled += corral_group_of_if_loaded(list) >= 0;
  }
  long sum = 0;
  while (list) { struct node *next = list->next; sum += list->value; free(list); list = next; }
  fprintf(stderr, "last scratch_pooled=%d list_pooled=%d\n", scratch_pooled, list_pooled);
  printf("hash %lu sum %ld\n", hash, sum);
  return 0;
}
