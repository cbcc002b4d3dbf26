/* A program that allocates through a shared library of its own
 * (libkvstore.so, found next to the program through rpath $ORIGIN): it fills
 * a map with records while keeping a log of its own allocations (notes that
 * are never read again), then looks records up many times. The layout that
 * matters is made inside the library.
 *
 * usage: sharedlib RECORDS LOOKUPS
 * prints the record count, the hits and a checksum. */
#include "../common/bench_util.h"
#include "kvstore.h"

struct note {
   struct note *next;
   char text[24];
};

int main(int argc, char **argv)
{
   long records = bench_arg(argc, argv, 1, 100000);
   long lookups = bench_arg(argc, argv, 2, 1000000);
   uint64_t rng = 31337, sum = 0, hits = 0;
   struct kv_store *kv = kv_open((unsigned)(records / 2 + 1));
   struct note *log = NULL;
   char key[32];

   for (long i = 0; i < records; i++) {
      snprintf(key, sizeof key, "rec%lx", (unsigned long)bench_next(&rng) % (unsigned long)(records * 2));
      kv_put(kv, key, (uint64_t)i + 1);
      struct note *n = malloc(sizeof *n);
      if (!n)
         bench_die_oom();
      snprintf(n->text, sizeof n->text, "put %ld", i);
      n->next = log;
      log = n;
   }
   for (long q = 0; q < lookups; q++) {
      snprintf(key, sizeof key, "rec%lx", (unsigned long)bench_below(&rng, (uint64_t)(records * 2)));
      uint64_t v = kv_get(kv, key);
      hits += v != 0;
      sum = bench_mix(sum, v);
   }
   while (log) {
      struct note *next = log->next;
      free(log);
      log = next;
   }
   printf("records %lu hits %llu\n", kv_count(kv), (unsigned long long)hits);
   kv_close(kv);
   bench_print_checksum(sum);
   return 0;
}
