/* A recursive tree builder and traverser: each node is built from a scratch
 * buffer (a short-lived temporary, as a parser's token or a string being
 * formatted) that is freed right after the node is made. The allocator puts
 * the next node where the last temporary was, so the long-lived nodes are
 * spread between dead temporaries; the tree is then searched many times.
 *
 * usage: treebuild DEPTH SEARCHES
 * prints the node count and a checksum. */
#include <string.h>

#include "../common/bench_util.h"

struct tree {
   struct tree *left, *right;
   uint64_t key;
   uint64_t value;
};

__attribute__((noinline)) static void *xmalloc(size_t size)
{
   void *p = malloc(size);
   return p ? p : bench_die_oom();
}

/* The temporary: sized so it lands in the same size class as a node or the
 * next one up, which is where size-segregated allocators interleave them. */
__attribute__((noinline)) static char *scratch_label(uint64_t key, uint64_t *rng)
{
   size_t len = 24 + (size_t)bench_below(rng, 24);
   char *buf = xmalloc(len);
   snprintf(buf, len, "node-%llu", (unsigned long long)key);
   return buf;
}

__attribute__((noinline)) static struct tree *make_node(uint64_t key, uint64_t *rng)
{
   char *label = scratch_label(key, rng);
   struct tree *t = xmalloc(sizeof *t);
   t->left = t->right = NULL;
   t->key = key;
   t->value = strlen(label) * 131 + (uint64_t)label[5];
   /* Every few nodes a temporary survives a while longer (a cached label). */
   if (key % 3 == 0)
      free(label);
   else {
      static char *kept[8];
      free(kept[key % 8]);
      kept[key % 8] = label;
   }
   return t;
}

/* Builds a balanced search tree over keys [lo, hi) in pre-order. */
static struct tree *build(uint64_t lo, uint64_t hi, uint64_t *rng)
{
   if (lo >= hi)
      return NULL;
   uint64_t mid = lo + (hi - lo) / 2;
   struct tree *t = make_node(mid * 2 + 1, rng);
   t->left = build(lo, mid, rng);
   t->right = build(mid + 1, hi, rng);
   return t;
}

static uint64_t search(const struct tree *t, uint64_t key)
{
   while (t) {
      if (key == t->key)
         return t->value;
      t = key < t->key ? t->left : t->right;
   }
   return 0;
}

static uint64_t walk_and_free(struct tree *t)
{
   if (!t)
      return 0;
   uint64_t s = bench_mix(walk_and_free(t->left), t->value) + walk_and_free(t->right);
   free(t);
   return s;
}

int main(int argc, char **argv)
{
   long depth = bench_arg(argc, argv, 1, 16);
   long searches = bench_arg(argc, argv, 2, 100000);
   uint64_t rng = 1984, sum = 0, found = 0;
   uint64_t nodes = (1ULL << depth) - 1;
   struct tree *root = build(0, nodes, &rng);

   for (long s = 0; s < searches; s++) {
      uint64_t v = search(root, bench_below(&rng, 2 * nodes + 1));
      found += v != 0;
      sum = bench_mix(sum, v);
   }
   sum = bench_mix(sum, walk_and_free(root));
   printf("nodes %llu found %llu\n", (unsigned long long)nodes, (unsigned long long)found);
   bench_print_checksum(sum);
   return 0;
}
