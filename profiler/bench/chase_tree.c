/* Pointer chasing, tree: a binary search tree of N random keys with separate
 * key/value records, queried Q times. */
#include <stdio.h>
#include <stdlib.h>

struct record { long key; long value; };
struct tree { struct tree* left; struct tree* right; struct record* rec; };

static struct tree* insert(struct tree* t, long key)
{
   if (t == NULL) {
      t = calloc(1, sizeof *t);
      t->rec = malloc(sizeof *t->rec);
      t->rec->key = key;
      t->rec->value = key * 3;
      return t;
   }
   if (key < t->rec->key) t->left = insert(t->left, key);
   else if (key > t->rec->key) t->right = insert(t->right, key);
   return t;
}

static long lookup(const struct tree* t, long key)
{
   while (t != NULL) {
      if (key == t->rec->key) return t->rec->value;
      t = key < t->rec->key ? t->left : t->right;
   }
   return 0;
}

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 50000;
   long queries = argc > 2 ? atol(argv[2]) : 500000;
   struct tree* root = NULL;
   srand(7);
   for (long i = 0; i < n; i++) root = insert(root, rand() % (4 * n));
   long sum = 0;
   for (long q = 0; q < queries; q++) sum += lookup(root, rand() % (4 * n));
   printf("%ld\n", sum);
   return 0;
}
