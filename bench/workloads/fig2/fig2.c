/* HALO Figure 2: a token stream makes objects of kinds A, B and C through one
 * allocation wrapper. Each A links to the B made with it and to the next A;
 * the A-B chain is traversed many times. C objects are made between them (and
 * outnumber them) but are only touched once, so with a size-blind allocator every
 * cache line brought in by the traversal is mostly C (C has the size of A and
 * B, so size-class allocators such as jemalloc interleave them as well). Grouping A and B packs
 * the traversed bytes together.
 *
 * usage: fig2 TOKENS ROUNDS
 * prints the number of A, B and C objects made and a checksum. */
#include "../common/bench_util.h"

struct b_obj {
   uint64_t weight;
   uint64_t stamp;
   struct b_obj *unused;
   uint64_t pad;
};

struct a_obj {
   struct a_obj *next;
   struct b_obj *partner;
   uint64_t key;
   uint64_t visits;
};

struct c_obj {
   uint64_t token;
   char text[24];   /* same size class as A and B: size-segregating allocators interleave them too */
};

/* One wrapper for all three kinds, as in the paper: frame 0 alone cannot tell
 * the kinds apart, only the callers can. */
__attribute__((noinline)) static void *xmalloc(size_t size)
{
   void *p = malloc(size);
   return p ? p : bench_die_oom();
}

__attribute__((noinline)) static struct a_obj *make_a(uint64_t key)
{
   struct a_obj *a = xmalloc(sizeof *a);
   a->next = NULL;
   a->partner = NULL;
   a->key = key;
   a->visits = 0;
   return a;
}

__attribute__((noinline)) static struct b_obj *make_b(uint64_t key)
{
   struct b_obj *b = xmalloc(sizeof *b);
   b->weight = key * 7 + 1;
   b->stamp = 0;
   b->unused = NULL;
   b->pad = key;
   return b;
}

__attribute__((noinline)) static struct c_obj *make_c(uint64_t token)
{
   struct c_obj *c = xmalloc(sizeof *c);
   c->token = token;
   snprintf(c->text, sizeof c->text, "t%llx", (unsigned long long)token);
   return c;
}

int main(int argc, char **argv)
{
   long tokens = bench_arg(argc, argv, 1, 100000);
   long rounds = bench_arg(argc, argv, 2, 10);
   uint64_t rng = 2020;
   long made_a = 0, made_b = 0, made_c = 0;
   struct a_obj *head = NULL, *tail = NULL;
   struct c_obj **cs = xmalloc(sizeof *cs * (size_t)(tokens + 1));
   uint64_t sum = 0;

   /* Tokens: mostly "A then B" pairs with a C or two in between. */
   for (long t = 0; t < tokens; t++) {
      uint64_t kind = bench_below(&rng, 10);
      if (kind < 4) {
         struct a_obj *a = make_a((uint64_t)t);
         cs[made_c++] = make_c((uint64_t)t);
         a->partner = make_b((uint64_t)t);
         made_a++;
         made_b++;
         if (tail)
            tail->next = a;
         else
            head = a;
         tail = a;
      } else {
         cs[made_c++] = make_c((uint64_t)t);
      }
   }

   for (long r = 0; r < rounds; r++) {
      uint64_t round_sum = 0;
      for (struct a_obj *a = head; a; a = a->next) {
         a->visits++;
         a->partner->stamp += a->key ^ (uint64_t)r;
         round_sum += a->partner->weight + a->partner->stamp;
      }
      sum = bench_mix(sum, round_sum);
   }

   for (long i = 0; i < made_c; i++) {
      sum = bench_mix(sum, cs[i]->token + (uint64_t)cs[i]->text[1]);
      free(cs[i]);
   }
   while (head) {
      struct a_obj *next = head->next;
      free(head->partner);
      free(head);
      head = next;
   }
   free(cs);
   printf("A %ld B %ld C %ld\n", made_a, made_b, made_c);
   bench_print_checksum(sum);
   return 0;
}
