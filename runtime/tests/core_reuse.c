/* Freed space is reused and empty chunks go back to the OS.
 *   core_reuse loop:   allocate and free 20000 objects, 300 times (LIFO and FIFO
 *                      orders); the stats must show few chunks.
 *   core_reuse spare:  grow the group heap to 64 MiB, free it all; resident
 *                      memory must fall back.
 *   core_reuse spare-later MS: the same with a purge delay of MS ms: the
 *                      freed chunks stay resident, then go back once the
 *                      delay has passed and the program allocates on.
 *   core_reuse mixed:  20000 objects of 64 bytes, freed, then 40000 of 32
 *                      bytes in the same space, 20 times. */
#include "core_check.h"

#include <string.h>
#include <unistd.h>

#define N 20000

static long resident_kib(void)
{
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *objects[1 << 20];

int main(int argc, char **argv)
{
  if (argc > 1 && strncmp(argv[1], "spare", 5) == 0) {
    int later = strcmp(argv[1], "spare-later") == 0;
    long before = resident_kib();
    size_t n = (64u << 20) / 64;
    for (size_t i = 0; i < n; i++) {
      objects[i] = malloc(64);
      memset(objects[i], 1, 64);
    }
    long peak = resident_kib();
    for (size_t i = 0; i < n; i++) free(objects[i]);
    long after = resident_kib();
    printf("resident KiB: before %ld, peak %ld, after free %ld\n", before, peak, after);
    CHECK(peak - before > 60 * 1024, "grew by %ld KiB", peak - before);
    if (!later) {
      CHECK(after - before < 16 * 1024, "kept %ld KiB after freeing everything", after - before);
    } else {
      CHECK(after - before > 48 * 1024, "kept only %ld KiB while the delay runs", after - before);
      usleep((useconds_t)(atol(argv[2]) + 200) * 1000);
      for (int i = 0; i < 100; i++) objects[i] = malloc(32);     /* a refill looks at the spares */
      long gone = resident_kib();
      for (int i = 0; i < 100; i++) free(objects[i]);
      printf("resident KiB once the delay passed: %ld\n", gone);
      CHECK(gone - before < 16 * 1024, "kept %ld KiB after the delay", gone - before);
    }
  } else if (argc > 1 && strcmp(argv[1], "mixed") == 0) {
    for (int round = 0; round < 20; round++) {
      for (int i = 0; i < N; i++) objects[i] = malloc(64);
      for (int i = 0; i < N; i++) free(objects[i]);
      for (int i = 0; i < 2 * N; i++) objects[i] = malloc(32);
      for (int i = 0; i < 2 * N; i++) free(objects[i]);
    }
  } else {
    for (int round = 0; round < 300; round++) {
      for (int i = 0; i < N; i++) objects[i] = malloc(48);
      if (round % 2)
        for (int i = N - 1; i >= 0; i--) free(objects[i]);
      else
        for (int i = 0; i < N; i++) free(objects[i]);
    }
  }
  return core_summary();
}
