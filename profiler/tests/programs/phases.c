/* Two independent phases, chosen by the first argument: "l" builds and
 * walks a linked list, "t" a binary tree, "lt" both. A profile of "lt" and
 * the merge of the profiles of "l" and "t" should tell the same story. The
 * second argument multiplies the walks (1), for a run long enough to sample. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item { struct item* next; long value; };
struct node { struct node* left; struct node* right; long value; };

__attribute__((noinline)) static long list_phase(int n, int rounds)
{
   struct item* head = NULL;
   for (int i = 0; i < n; i++) {
      struct item* it = malloc(sizeof *it);
      if (!it) abort();
      it->value = i;
      it->next = head;
      head = it;
   }
   long sum = 0;
   for (int r = 0; r < rounds; r++)
      for (struct item* it = head; it; it = it->next) sum += it->value;
   while (head) { struct item* next = head->next; free(head); head = next; }
   return sum;
}

__attribute__((noinline)) static struct node* grow(int depth)
{
   if (depth == 0) return NULL;
   struct node* n = malloc(sizeof *n);
   if (!n) abort();
   n->value = depth;
   n->left = grow(depth - 1);
   n->right = grow(depth - 1);
   __asm__ volatile("" ::: "memory");
   return n;
}

static long walk(const struct node* n) { return n ? n->value + walk(n->left) + walk(n->right) : 0; }

__attribute__((noinline)) static long tree_phase(int depth, int rounds)
{
   struct node* root = grow(depth);
   long sum = 0;
   for (int r = 0; r < rounds; r++) sum += walk(root);
   return sum;
}

int main(int argc, char** argv)
{
   const char* which = argc > 1 ? argv[1] : "lt";
   int times = argc > 2 ? atoi(argv[2]) : 1;
   long sum = 0;
   if (strchr(which, 'l')) sum += list_phase(2000, 20 * times);
   if (strchr(which, 't')) sum += tree_phase(10, 20 * times);
   printf("%ld\n", sum);
   return 0;
}
