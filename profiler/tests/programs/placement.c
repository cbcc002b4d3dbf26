/* The placement model on a known allocation order, all objects 32 bytes
 * (one size class) but for the 200-byte spacers, which sit in a class of
 * their own and must not come between the others:
 *   - 100 "burst" objects made one after another (each follows a burst);
 *   - 100 rounds of "left", spacer, "right" (left follows right, right
 *     follows left);
 *   - 60 "right" objects freed, then 60 "refill" objects made: each takes
 *     the slot of a freed "right" (reused, neighbour "right");
 *   - then 10 more "refill" from fresh space: the first follows the last
 *     "right", the other nine follow a "refill";
 *   - a 5000-byte block, larger than --max-size, is not modelled. */
#include <stdlib.h>

#define N 100

__attribute__((noinline)) static void *make(size_t size)
{
   void *p = malloc(size);
   if (p == NULL) abort();
   return p;
}

__attribute__((noinline)) static void *burst(void) { return make(32); }
__attribute__((noinline)) static void *left(void) { return make(32); }
__attribute__((noinline)) static void *right(void) { return make(32); }
__attribute__((noinline)) static void *spacer(void) { return make(200); }
__attribute__((noinline)) static void *refill(void) { return make(32); }
__attribute__((noinline)) static void *huge(void) { return make(5000); }

int main(void)
{
   static void *keep[N], *l[N], *r[N], *s[N], *f[70];
   for (int i = 0; i < N; i++) keep[i] = burst();
   for (int i = 0; i < N; i++) {
      l[i] = left();
      s[i] = spacer();
      r[i] = right();
   }
   for (int i = 0; i < 60; i++) free(r[i]);
   for (int i = 0; i < 70; i++) f[i] = refill();
   void *h = huge();
   free(h);
   for (int i = 0; i < N; i++) free(keep[i]), free(l[i]), free(s[i]);
   for (int i = 60; i < N; i++) free(r[i]);
   for (int i = 0; i < 70; i++) free(f[i]);
   return 0;
}
