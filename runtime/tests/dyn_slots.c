/* Slot calls in dynamic mode (docs/dynamic.md, "Slot calls"): a pooled
 * site's direct call to malloc is pointed at a slot stub once its pool is
 * settled, and the slot's word must follow every later change of the
 * site's pool.
 *   older:  24-byte nodes from one site, pooled and settled first;
 *   younger: 24-byte nodes from another site, pooled and settled after, apart;
 *   then the younger site's nodes point into the older's: the two pools
 *   merge (type I) into the older, so the younger site's later nodes must
 *   land there although its call now goes straight to its slot;
 *   mixed:  one site whose requests change size after it was settled (24,
 *   then 40 bytes): each object must be as large as asked (filled and
 *   checked);
 *   zeroed: a calloc site whose pool is settled, its blocks dirtied, half
 *   freed and asked for again: every block from its slot way comes zeroed.
 * Reports on stderr the groups of each phase's last quarter ("NAME
 * groups=G"); stdout carries only checksums. */
#include "dyn_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define N 6000

struct node { struct node *next; long value; long spare; };

NOIPA struct node *older_node(struct node *next, long v) {
  struct node *p = malloc(sizeof *p); p->next = next; p->value = v; p->spare = 0; return p;
}
NOIPA struct node *younger_node(struct node *next, long v) {
  struct node *p = malloc(sizeof *p); p->next = next; p->value = v * 3; p->spare = 1; return p;
}
NOIPA unsigned char *mixed_block(size_t size, int fill) {
  unsigned char *p = malloc(size);
  memset(p, fill, size);
  p[size - 1] = (unsigned char)fill;   /* a write of its own: not a wrapper, its call is the context */
  return p;
}

NOIPA unsigned char *zeroed_block(void) {
  unsigned char *p = calloc(1, 48);
  p[47] = 1;                  /* it writes the object: not a wrapper, its call is the context */
  return p;
}

int main(void) {
  static void *older[N], *younger[N], *linked[4 * N];
  struct node *old_list = NULL, *young_list = NULL;
  for (int i = 0; i < N; i++) older[i] = old_list = older_node(old_list, i);
  for (int i = 0; i < N; i++) younger[i] = young_list = younger_node(young_list, i);
  report("older", older, N);
  report("younger", younger, N);

  /* Each new younger node points at an older node: its pool links into the
   * older one's and the steady samples see it. */
  struct node *cross = NULL;
  long sum = 0;
  for (int i = 0; i < 4 * N; i++) {
    linked[i] = cross = younger_node((struct node *)older[i % N], i);
    sum += cross->next->value;
  }
  report("linked", linked, 4 * N);

  /* A settled 24-byte site asked for 40 bytes: every block must hold them. */
  static unsigned char *mixed[2 * N];
  for (int i = 0; i < N; i++) mixed[i] = mixed_block(24, i & 0xff);
  for (int i = N; i < 2 * N; i++) mixed[i] = mixed_block(40, i & 0xff);
  int bad = 0;
  for (int i = 0; i < 2 * N; i++) {
    size_t size = i < N ? 24 : 40;
    for (size_t k = 0; k < size; k++) bad |= mixed[i][k] != (unsigned char)(i & 0xff);
  }
  report("mixed_late", (void **)mixed + N, N);

  static unsigned char *zeroed[N];
  for (int i = 0; i < N; i++) memset(zeroed[i] = zeroed_block(), 0xff, 48);
  for (int i = 0; i < N; i += 2) free(zeroed[i]);
  int dirty = 0;
  for (int i = 0; i < N; i += 2) {
    zeroed[i] = zeroed_block();
    for (int k = 0; k < 47; k++) dirty |= zeroed[i][k];
  }
  report("zeroed", (void **)zeroed, N);
  fprintf(stderr, "check bad=%d dirty=%d\n", bad, dirty);

  for (struct node *p = old_list; p; p = p->next) sum += p->value;
  for (struct node *p = young_list; p; p = p->next) sum += p->value;
  printf("sum %ld bad %d dirty %d\n", sum, bad, dirty);
  return 0;
}
