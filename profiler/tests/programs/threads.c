/* Threads: two kinds of worker build and walk their own lists at the same
 * time. Each thread has its own affinity queue, so the two workers' objects
 * are never affinitive to each other. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct node { struct node* next; long value; };

#define N 500
#define ROUNDS 10

__attribute__((noinline)) static struct node* push(struct node* head, long v)
{
   struct node* n = malloc(sizeof *n);
   if (n == NULL) abort();
   n->value = v;
   n->next = head;
   return n;
}

static long walk(struct node* head)
{
   long sum = 0;
   for (int r = 0; r < ROUNDS; r++)
      for (struct node* n = head; n; n = n->next) sum += n->value;
   return sum;
}

__attribute__((noinline)) static void* worker_even(void* arg)
{
   struct node* head = NULL;
   for (long i = 0; i < N; i++) head = push(head, 2 * i);
   *(long*)arg = walk(head);
   return NULL;
}

__attribute__((noinline)) static void* worker_odd(void* arg)
{
   struct node* head = NULL;
   for (long i = 0; i < N; i++) head = push(head, 2 * i + 1);
   *(long*)arg = walk(head);
   return NULL;
}

int main(void)
{
   pthread_t t[4];
   long sums[4];
   for (int i = 0; i < 4; i++)
      pthread_create(&t[i], NULL, i % 2 ? worker_odd : worker_even, &sums[i]);
   for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
   printf("%ld\n", sums[0] + sums[1] + sums[2] + sums[3]);
   return 0;
}
