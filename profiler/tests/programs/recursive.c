/* A recursive builder: every level of `build` allocates one node. Without
 * recursion reduction each depth would be its own context. */
#include <stdio.h>
#include <stdlib.h>

struct node { struct node* next; long value; };

__attribute__((noinline)) static struct node* build(int depth)
{
   if (depth == 0) return NULL;
   struct node* n = malloc(sizeof *n);
   if (n == NULL) abort();
   n->value = depth;
   n->next = build(depth - 1);
   return n;
}

int main(int argc, char** argv)
{
   int depth = argc > 1 ? atoi(argv[1]) : 200;
   long sum = 0;
   for (struct node* n = build(depth); n; n = n->next) sum += n->value;
   printf("%ld\n", sum);
   return 0;
}
