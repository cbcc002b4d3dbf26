/* Dynamic mode's judgement of pools whose objects die young (docs/dynamic.md,
 * "When a context gets a pool"). Three contexts, each from a call of its
 * own: `record` makes pointer-free records, through a wrapper, in batches
 * of RECORDS (more than a page live), each batch freed whole, oldest
 * first, before the next: they churn and link to nothing, and the records
 * its samples read again have often been freed and not yet handed out
 * again (word 0 then links the pool's free list); `job` keeps a queue of
 * JOBS entries, each pointing to the next, and frees the oldest as each
 * new one comes: they churn but are linked; `node` builds a list that is
 * never freed. Only the records' pool is given back. With
 * `-DONLY_RECORDS`, only the records are made: no pool is then left in
 * use, and dynamic mode steps aside. Prints where the last objects landed
 * and a checksum of the contents. */
#include "../include/corral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define ROUNDS 300000
#define RECORDS 2000
#define JOBS 2000

struct record { long key; char text[32]; };
struct job { struct job *next; long id; char pad[24]; };
struct node { struct node *next; long value, weight; };   /* 24 bytes: packed tighter than any base */

/* The program's allocator, as universal-ctags' eMalloc: every record
 * comes through it, so that its requests pay the lookup through a
 * wrapper and count towards stepping aside. */
NOIPA void *xmalloc(size_t size) {
  void *p = malloc(size);
  if (!p) abort();
  return p;
}

NOIPA struct record *make_record(long i) {
  struct record *r = xmalloc(sizeof *r);
  r->key = i;
  snprintf(r->text, sizeof r->text, "record %ld", i);
  return r;
}

NOIPA struct job *make_job(long i) {
  struct job *j = malloc(sizeof *j);
  j->next = NULL;
  j->id = i;
  memset(j->pad, (int)(i & 0x7f), sizeof j->pad);
  return j;
}

NOIPA struct node *make_node(struct node *next, long v) {
  struct node *n = malloc(sizeof *n);
  n->next = next;
  n->value = v;
  n->weight = v & 7;
  return n;
}

int main(void) {
  static struct record *records[RECORDS];
  struct job *head = NULL, *tail = NULL;
  struct node *list = NULL;
  (void)tail;
  (void)list;
  unsigned long sum = 0;
  int record_pooled = 0, job_pooled = 0, node_pooled = 0;
  for (long i = 0; i < ROUNDS; i++) {
    if (i % RECORDS == 0 && i > 0)
      for (int k = 0; k < RECORDS; k++) {
        sum = sum * 31 + (unsigned long)records[k]->key + (unsigned char)records[k]->text[7];
        free(records[k]);
      }
    records[i % RECORDS] = make_record(i);
    if (i >= ROUNDS - 100) record_pooled += corral_group_of_if_loaded(records[i % RECORDS]) >= 0;
#ifndef ONLY_RECORDS
    struct job *j = make_job(i);
    if (tail) tail->next = j;
    else head = j;
    tail = j;
    if (i >= JOBS) {
      struct job *done = head;
      head = head->next;
      sum = sum * 31 + (unsigned long)done->id + (unsigned char)done->pad[3];
      free(done);
    }
    if (i >= ROUNDS - 100) job_pooled += corral_group_of_if_loaded(j) >= 0;
    if (i % 4 == 0) {
      list = make_node(list, i);
      if (i >= ROUNDS - 400) node_pooled += corral_group_of_if_loaded(list) >= 0;
    }
#endif
  }
  for (int k = 0; k < RECORDS; k++) free(records[k]);
  while (head) { struct job *next = head->next; sum += (unsigned long)head->id; free(head); head = next; }
  while (list) { struct node *next = list->next; sum += (unsigned long)list->value; free(list); list = next; }
  fprintf(stderr, "last record_pooled=%d job_pooled=%d node_pooled=%d\n", record_pooled, job_pooled, node_pooled);
  printf("sum %lu\n", sum);
  return 0;
}
