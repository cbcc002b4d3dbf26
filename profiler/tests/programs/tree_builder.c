/* A recursive builder with two recursive call sites (left and right child)
 * and a mutual recursion (a forest of trees, each planted by `plant`, which
 * calls back into `forest`). Whatever order the recursion took, each node's
 * context should be told only by its innermost recursive call site. */
#include <stdio.h>
#include <stdlib.h>

struct node { struct node* left; struct node* right; long value; };

__attribute__((noinline)) static struct node* build(int depth)
{
   if (depth == 0) return NULL;
   struct node* n = malloc(sizeof *n);
   if (n == NULL) abort();
   n->value = depth;
   n->left = build(depth - 1);
   n->right = build(depth - 1);
   __asm__ volatile("" ::: "memory");   /* no tail call: keep both frames */
   return n;
}

static long sum(const struct node* n) { return n ? n->value + sum(n->left) + sum(n->right) : 0; }

__attribute__((noinline)) static long forest(int trees, int depth);

__attribute__((noinline)) static long plant(int trees, int depth)
{
   struct node* root = build(depth);
   long s = sum(root) + forest(trees - 1, depth);
   __asm__ volatile("" ::: "memory");
   return s;
}

__attribute__((noinline)) static long forest(int trees, int depth)
{
   long s = trees > 0 ? plant(trees, depth) : 0;
   __asm__ volatile("" ::: "memory");
   return s;
}

int main(int argc, char** argv)
{
   int depth = argc > 1 ? atoi(argv[1]) : 10;
   int trees = argc > 2 ? atoi(argv[2]) : 4;
   printf("%ld\n", forest(trees, depth));
   return 0;
}
