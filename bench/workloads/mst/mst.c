/* Minimum spanning tree in the style of Ptrdist ft: a random sparse graph
 * kept as adjacency lists of small edge records, and Prim's algorithm driven
 * by a pairing heap whose nodes are allocated one by one. Edges, vertices and
 * heap nodes are allocated interleaved while the graph is built; Prim then
 * chases vertex -> edge -> heap node pointers.
 *
 * usage: mst VERTICES DEGREE [REPEATS]
 * prints the tree weight and a checksum. */
#include "../common/bench_util.h"

struct heap_node;

struct edge {
   struct edge *next;
   struct vertex *to;
   uint64_t weight;
};

struct vertex {
   struct edge *edges;
   struct heap_node *in_heap;
   uint64_t key;
   int done;
   long id;
};

struct heap_node {
   struct heap_node *child, *sibling, *prev;   /* prev: parent or left sibling */
   struct vertex *v;
   uint64_t key;
};

__attribute__((noinline)) static void *xmalloc(size_t size)
{
   void *p = malloc(size);
   return p ? p : bench_die_oom();
}

__attribute__((noinline)) static void add_edge(struct vertex *a, struct vertex *b, uint64_t w)
{
   struct edge *e = xmalloc(sizeof *e);
   e->to = b;
   e->weight = w;
   e->next = a->edges;
   a->edges = e;
}

/* Vertices are allocated one by one, like Ptrdist's, not as an array. */
__attribute__((noinline)) static struct vertex *make_vertex(long id)
{
   struct vertex *v = xmalloc(sizeof *v);
   *v = (struct vertex){.id = id};
   return v;
}

/* ---- pairing heap ---- */

static struct heap_node *meld(struct heap_node *a, struct heap_node *b)
{
   if (!a)
      return b;
   if (!b)
      return a;
   if (b->key < a->key) {
      struct heap_node *t = a;
      a = b;
      b = t;
   }
   b->prev = a;
   b->sibling = a->child;
   if (a->child)
      a->child->prev = b;
   a->child = b;
   a->sibling = NULL;
   a->prev = NULL;
   return a;
}

__attribute__((noinline)) static struct heap_node *heap_insert(struct heap_node *root, struct vertex *v)
{
   struct heap_node *n = xmalloc(sizeof *n);
   n->child = n->sibling = n->prev = NULL;
   n->v = v;
   n->key = v->key;
   v->in_heap = n;
   return meld(root, n);
}

static struct heap_node *merge_pairs(struct heap_node *first)
{
   /* Two passes without recursion: pair left to right, then meld right to left. */
   struct heap_node *pairs = NULL;
   while (first) {
      struct heap_node *a = first, *b = first->sibling;
      first = b ? b->sibling : NULL;
      a->sibling = a->prev = NULL;
      if (b)
         b->sibling = b->prev = NULL;
      struct heap_node *m = meld(a, b);
      m->sibling = pairs;
      pairs = m;
   }
   struct heap_node *root = NULL;
   while (pairs) {
      struct heap_node *next = pairs->sibling;
      pairs->sibling = NULL;
      root = meld(root, pairs);
      pairs = next;
   }
   return root;
}

static struct heap_node *heap_pop(struct heap_node *root)
{
   struct heap_node *rest = merge_pairs(root->child);
   root->v->in_heap = NULL;
   free(root);
   return rest;
}

static struct heap_node *decrease_key(struct heap_node *root, struct heap_node *n, uint64_t key)
{
   n->key = key;
   if (n == root)
      return root;
   /* Cut n out of its parent's child list, then meld it back at the root. */
   if (n->prev->child == n)
      n->prev->child = n->sibling;
   else
      n->prev->sibling = n->sibling;
   if (n->sibling)
      n->sibling->prev = n->prev;
   n->sibling = n->prev = NULL;
   return meld(root, n);
}

static uint64_t prim(struct vertex **vs, long n)
{
   uint64_t total = 0;
   for (long i = 0; i < n; i++) {
      vs[i]->key = UINT64_MAX;
      vs[i]->done = 0;
      vs[i]->in_heap = NULL;
   }
   vs[0]->key = 0;
   struct heap_node *root = heap_insert(NULL, vs[0]);
   while (root) {
      struct vertex *u = root->v;
      root = heap_pop(root);
      u->done = 1;
      total += u->key;
      for (struct edge *e = u->edges; e; e = e->next) {
         struct vertex *w = e->to;
         if (w->done || e->weight >= w->key)
            continue;
         w->key = e->weight;
         root = w->in_heap ? decrease_key(root, w->in_heap, w->key) : heap_insert(root, w);
      }
   }
   return total;
}

int main(int argc, char **argv)
{
   long n = bench_arg(argc, argv, 1, 10000);
   long degree = bench_arg(argc, argv, 2, 8);
   long repeats = bench_arg(argc, argv, 3, 1);
   uint64_t rng = 1998, sum = 0, weight = 0;
   struct vertex **vs = xmalloc(sizeof *vs * (size_t)n);

   for (long i = 0; i < n; i++)
      vs[i] = make_vertex(i);
   /* A ring keeps the graph connected; random chords make it a real graph. */
   for (long i = 0; i < n; i++) {
      uint64_t w = 1 + bench_below(&rng, 1000000);
      add_edge(vs[i], vs[(i + 1) % n], w);
      add_edge(vs[(i + 1) % n], vs[i], w);
      for (long d = 1; d < degree / 2; d++) {
         long j = (long)bench_below(&rng, (uint64_t)n);
         w = 1 + bench_below(&rng, 1000000);
         add_edge(vs[i], vs[j], w);
         add_edge(vs[j], vs[i], w);
      }
   }
   for (long r = 0; r < repeats; r++) {
      weight = prim(vs, n);
      sum = bench_mix(sum, weight);
   }
   for (long i = 0; i < n; i++) {
      sum = bench_mix(sum, vs[i]->key);
      while (vs[i]->edges) {
         struct edge *e = vs[i]->edges;
         vs[i]->edges = e->next;
         free(e);
      }
      free(vs[i]);
   }
   free(vs);
   printf("vertices %ld tree weight %llu\n", n, (unsigned long long)weight);
   bench_print_checksum(sum);
   return 0;
}
