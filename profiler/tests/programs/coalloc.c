/* Co-allocatability. Pairs (x1, y1) are linked and traversed exactly like
 * pairs (x2, y2). Each x1 and each y1 is followed by a spare allocation from
 * its own context, so in the allocation order of {x1, y1} no x1 is ever next
 * to a y1: no pool of the two could place them side by side, and the edge
 * must vanish. Between x2 and y2 only a third context (z) allocates, which a
 * pool of {x2, y2} never sees: that edge stays. */
#include <stdio.h>
#include <stdlib.h>

struct obj { struct obj* next; struct obj* partner; long value; };

#define N 200
#define ROUNDS 20

__attribute__((noinline)) static struct obj* make(long v)
{
   struct obj* o = malloc(sizeof *o);
   if (o == NULL) abort();
   o->next = o->partner = NULL;
   o->value = v;
   return o;
}

__attribute__((noinline)) static struct obj* create_x1(long v) { return make(v); }
__attribute__((noinline)) static struct obj* create_y1(long v) { return make(v); }
__attribute__((noinline)) static struct obj* create_x2(long v) { return make(v); }
__attribute__((noinline)) static struct obj* create_y2(long v) { return make(v); }
__attribute__((noinline)) static struct obj* create_z(long v) { return make(v); }

static long traverse(struct obj* list)
{
   long sum = 0;
   for (int r = 0; r < ROUNDS; r++)
      for (struct obj* a = list; a; a = a->next)
         sum += a->value + a->partner->value;
   return sum;
}

static volatile int copies = 2;   /* volatile: the loops stay loops, one call site each */
static struct obj* spares[4 * N];
static int n_spares;

int main(void)
{
   struct obj* list1 = NULL;
   struct obj* list2 = NULL;
   struct obj* two[2];
   for (long i = 0; i < N; i++) {
      for (int k = 0; k < copies; k++) two[k] = create_x1(i);
      struct obj* x = two[0];
      spares[n_spares++] = two[1];
      for (int k = 0; k < copies; k++) two[k] = create_y1(i);
      x->partner = two[0];
      spares[n_spares++] = two[1];
      x->next = list1;
      list1 = x;
   }
   for (long i = 0; i < N; i++) {
      struct obj* x = create_x2(i);
      spares[n_spares++] = create_z(i);
      x->partner = create_y2(i);
      spares[n_spares++] = create_z(-i);
      x->next = list2;
      list2 = x;
   }
   printf("%ld %ld %d\n", traverse(list1), traverse(list2), n_spares);
   return 0;
}
