/* Multithreaded producer/consumer in the style of the Amplify benchmark:
 * producers build small binary trees (depth 1, 3 or 5, in turn) and pass
 * them through a bounded queue; consumers walk each tree several times and
 * free it. Objects are allocated by one thread and freed by another.
 *
 * usage: prodcons THREADS ITEMS_PER_PRODUCER
 * THREADS producers and THREADS consumers. The checksum is a sum, so it does
 * not depend on which consumer took which tree. */
#include <pthread.h>

#include "../common/bench_util.h"

struct tnode {
   struct tnode *left, *right;
   uint64_t value;
};

#define QUEUE_SLOTS 256
#define WALKS 8

static struct {
   pthread_mutex_t lock;
   pthread_cond_t not_empty, not_full;
   struct tnode *slot[QUEUE_SLOTS];
   long head, count, producers_left;
} queue = {.lock = PTHREAD_MUTEX_INITIALIZER, .not_empty = PTHREAD_COND_INITIALIZER,
           .not_full = PTHREAD_COND_INITIALIZER};

static long items_per_producer;

__attribute__((noinline)) static void *xmalloc(size_t size)
{
   void *p = malloc(size);
   return p ? p : bench_die_oom();
}

static struct tnode *make_tree(int depth, uint64_t *rng)
{
   if (depth == 0)
      return NULL;
   struct tnode *n = xmalloc(sizeof *n);
   n->value = bench_below(rng, 1000);
   n->left = make_tree(depth - 1, rng);
   n->right = make_tree(depth - 1, rng);
   return n;
}

static uint64_t walk(const struct tnode *n)
{
   return n ? n->value + 2 * walk(n->left) + 3 * walk(n->right) : 0;
}

static void free_tree(struct tnode *n)
{
   if (n) {
      free_tree(n->left);
      free_tree(n->right);
      free(n);
   }
}

static void put(struct tnode *t)
{
   pthread_mutex_lock(&queue.lock);
   while (queue.count == QUEUE_SLOTS)
      pthread_cond_wait(&queue.not_full, &queue.lock);
   queue.slot[(queue.head + queue.count++) % QUEUE_SLOTS] = t;
   pthread_cond_signal(&queue.not_empty);
   pthread_mutex_unlock(&queue.lock);
}

/* NULL once every producer is done and the queue is empty. */
static struct tnode *take(void)
{
   struct tnode *t = NULL;
   pthread_mutex_lock(&queue.lock);
   while (queue.count == 0 && queue.producers_left > 0)
      pthread_cond_wait(&queue.not_empty, &queue.lock);
   if (queue.count > 0) {
      t = queue.slot[queue.head];
      queue.head = (queue.head + 1) % QUEUE_SLOTS;
      queue.count--;
      pthread_cond_signal(&queue.not_full);
   }
   pthread_mutex_unlock(&queue.lock);
   return t;
}

static void *producer(void *arg)
{
   static const int depths[] = {1, 3, 5};
   uint64_t rng = 77 + (uint64_t)(uintptr_t)arg;
   for (long i = 0; i < items_per_producer; i++)
      put(make_tree(depths[i % 3], &rng));
   pthread_mutex_lock(&queue.lock);
   queue.producers_left--;
   pthread_cond_broadcast(&queue.not_empty);
   pthread_mutex_unlock(&queue.lock);
   return NULL;
}

static void *consumer(void *arg)
{
   uint64_t *sum = arg;
   struct tnode *t;
   while ((t = take()) != NULL) {
      for (int w = 0; w < WALKS; w++)
         *sum += walk(t) * (uint64_t)(w + 1);
      free_tree(t);
   }
   return NULL;
}

int main(int argc, char **argv)
{
   long threads = bench_arg(argc, argv, 1, 2);
   items_per_producer = bench_arg(argc, argv, 2, 10000);
   if (threads < 1 || threads > 64) {
      fputs("prodcons: THREADS must be 1..64\n", stderr);
      return 2;
   }
   pthread_t prod[64], cons[64];
   uint64_t sums[64] = {0}, total = 0;

   queue.producers_left = threads;
   for (long i = 0; i < threads; i++) {
      pthread_create(&prod[i], NULL, producer, (void *)(uintptr_t)i);
      pthread_create(&cons[i], NULL, consumer, &sums[i]);
   }
   for (long i = 0; i < threads; i++) {
      pthread_join(prod[i], NULL);
      pthread_join(cons[i], NULL);
      total += sums[i];
   }
   printf("threads %ld trees %ld\n", threads, threads * items_per_producer);
   bench_print_checksum(total);
   return 0;
}
