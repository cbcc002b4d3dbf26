/* HALO's Figure 2: objects A, B and C come from create_a/b/c through one
 * allocation wrapper; A and B are linked and traversed together, C is left
 * alone. Builds as C (malloc) and as C++ (operator new). */
#include <stdio.h>
#include <stdlib.h>
#ifdef __cplusplus
#include <new>
#endif

struct obj { struct obj* next; struct obj* partner; long value; };

#define N 300
#define ROUNDS 20

__attribute__((noinline)) static struct obj* wrapper(void)
{
#ifdef __cplusplus
   struct obj* o = static_cast<struct obj*>(::operator new(sizeof(struct obj)));
#else
   struct obj* o = malloc(sizeof *o);
#endif
   if (o == NULL) abort();     /* work after the call: no tail call */
   o->next = o->partner = NULL;
   return o;
}

__attribute__((noinline)) static struct obj* create_a(long v) { struct obj* o = wrapper(); o->value = v; return o; }
__attribute__((noinline)) static struct obj* create_b(long v) { struct obj* o = wrapper(); o->value = v; return o; }
__attribute__((noinline)) static struct obj* create_c(long v) { struct obj* o = wrapper(); o->value = v; return o; }

int main(void)
{
   static struct obj* cs[N];
   struct obj* list = NULL;
   for (long i = 0; i < N; i++) {
      struct obj* a = create_a(i);
      a->partner = create_b(2 * i);
      cs[i] = create_c(3 * i);
      a->next = list;
      list = a;
   }
   long sum = 0;
   for (int r = 0; r < ROUNDS; r++)
      for (struct obj* a = list; a; a = a->next)
         sum += a->value + a->partner->value;
   printf("%ld %p\n", sum, (void*)cs[N - 1]);
   return 0;
}
