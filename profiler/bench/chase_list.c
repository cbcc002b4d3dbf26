/* Pointer chasing, list: N nodes linked in a shuffled order, walked ROUNDS
 * times. Most instructions are loads of heap objects. */
#include <stdio.h>
#include <stdlib.h>

struct node { struct node* next; long value; long pad[2]; };

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 100000;
   int rounds = argc > 2 ? atoi(argv[2]) : 50;
   struct node** nodes = malloc(n * sizeof *nodes);
   for (long i = 0; i < n; i++) {
      nodes[i] = malloc(sizeof(struct node));
      nodes[i]->value = i;
   }
   srand(42);
   for (long i = n - 1; i > 0; i--) {      /* Fisher-Yates: a random walk order */
      long j = rand() % (i + 1);
      struct node* t = nodes[i]; nodes[i] = nodes[j]; nodes[j] = t;
   }
   for (long i = 0; i + 1 < n; i++) nodes[i]->next = nodes[i + 1];
   nodes[n - 1]->next = NULL;
   long sum = 0;
   for (int r = 0; r < rounds; r++)
      for (struct node* p = nodes[0]; p; p = p->next) sum += p->value;
   printf("%ld\n", sum);
   return 0;
}
