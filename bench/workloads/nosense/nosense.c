/* Allocation-heavy but layout-insensitive, for the no-harm check: each job
 * allocates a buffer, works on it alone for a while (a small hash over its
 * bytes), and frees it. No object is ever used together with another, so
 * no grouping can help; a layout tool should cost nothing here.
 *
 * usage: nosense JOBS
 * prints the job count and a checksum. */
#include <string.h>

#include "../common/bench_util.h"

__attribute__((noinline)) static unsigned char *make_buffer(size_t size, uint64_t seed)
{
   unsigned char *b = malloc(size);
   if (!b)
      bench_die_oom();
   memset(b, (int)(seed & 0xff), size);
   return b;
}

/* Several passes over one buffer: work that stays inside a single object. */
static uint64_t digest(unsigned char *b, size_t size)
{
   uint64_t h = 1469598103934665603ULL;
   for (int pass = 0; pass < 4; pass++)
      for (size_t i = 0; i < size; i++) {
         b[i] = (unsigned char)(b[i] * 7 + pass + (unsigned char)i);
         h = (h ^ b[i]) * 1099511628211ULL;
      }
   return h;
}

int main(int argc, char **argv)
{
   long jobs = bench_arg(argc, argv, 1, 100000);
   uint64_t rng = 4242, sum = 0;
   unsigned char *held[16] = {0};

   for (long j = 0; j < jobs; j++) {
      size_t size = 16 + (size_t)bench_below(&rng, 496);
      unsigned char *b = make_buffer(size, (uint64_t)j);
      sum = bench_mix(sum, digest(b, size));
      /* A few buffers live on briefly, so frees are not purely LIFO. */
      unsigned slot = (unsigned)(j % 16);
      free(held[slot]);
      held[slot] = b;
   }
   for (int i = 0; i < 16; i++)
      free(held[i]);
   printf("jobs %ld\n", jobs);
   bench_print_checksum(sum);
   return 0;
}
