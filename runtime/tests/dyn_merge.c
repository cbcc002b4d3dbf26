/* Merging in dynamic mode. Usage: dyn_merge N
 *   list:     one linked list whose 24-byte nodes come from two call sites,
 *             alternately (type I: same size, linking to each other);
 *   payload:  16-byte list nodes whose `data` field points to 8-byte payloads
 *             from two call sites (type II: one field, two pools);
 *   apart:    two call sites of 24-byte objects that never point to each
 *             other or from one field (must stay apart).
 * Reports on stderr, for the last quarter of each site's objects, the groups
 * they landed in ("SITE groups=G,G"); stdout carries only checksums. */
#include "dyn_report.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define NOIPA __attribute__((noipa))

struct node { struct node *next; long value; long spare; };
struct cell { struct cell *next; long *data; };


NOIPA struct node *node_from_a(struct node *next, long v) {
  struct node *p = malloc(sizeof *p); p->next = next; p->value = v; p->spare = 0; return p;
}
NOIPA struct node *node_from_b(struct node *next, long v) {
  struct node *p = malloc(sizeof *p); p->next = next; p->value = v * 3; p->spare = 1; return p;
}
NOIPA long *payload_from_e(long v) { long *p = malloc(sizeof *p); *p = v; return p; }
NOIPA long *payload_from_f(long v) { long *p = malloc(sizeof *p); *p = -v; return p; }
NOIPA struct cell *cell_new(struct cell *next, long *data) {
  struct cell *c = malloc(sizeof *c); c->next = next; c->data = data; return c;
}
NOIPA struct node *record_from_c(long v) {
  struct node *p = malloc(sizeof *p); p->next = (struct node *)(v * 8 + 1); p->value = v; p->spare = 2; return p;
}
NOIPA struct node *record_from_d(long v) {
  struct node *p = malloc(sizeof *p); p->next = (struct node *)(v * 8 + 3); p->value = -v; p->spare = 3; return p;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4000;
  void **a = calloc((size_t)n, sizeof *a), **b = calloc((size_t)n, sizeof *b);

  struct node *head = NULL;
  for (int i = 0; i < n; i++) {
    head = a[i] = node_from_a(head, i);
    head = b[i] = node_from_b(head, i);
  }
  long sum = 0;
  for (struct node *p = head; p; p = p->next) sum += p->value;
  printf("list %ld\n", sum);
  report("list_a", a, n);
  report("list_b", b, n);

  struct cell *cells = NULL;
  for (int i = 0; i < n; i++) {
    a[i] = payload_from_e(i);
    b[i] = payload_from_f(i);
    cells = cell_new(cell_new(cells, a[i]), b[i]);
  }
  sum = 0;
  for (struct cell *c = cells; c; c = c->next) sum += *c->data;
  printf("payload %ld\n", sum);
  report("payload_e", a, n);
  report("payload_f", b, n);

  for (int i = 0; i < n; i++) {
    a[i] = record_from_c(i);
    b[i] = record_from_d(i);
  }
  sum = 0;
  for (int i = 0; i < n; i++) sum += ((struct node *)a[i])->value + ((struct node *)b[i])->value;
  printf("apart %ld\n", sum);
  report("apart_c", a, n);
  report("apart_d", b, n);
  return 0;
}
