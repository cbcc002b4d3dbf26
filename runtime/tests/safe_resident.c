/* Safe mode's empty chunks: a site fills a chunk and a half with 64-byte
 * blocks and frees them all, so its first chunk (retired) is emptied and
 * given back to its pool; then, with `two`, a second site does the same with
 * 128-byte blocks (another pool). Prints whether a page inside each
 * site's first chunk is still resident (mincore), then fills the first
 * site's pool again and prints whether it reused that chunk. With
 * `refree`, it frees a block of that chunk once more.
 * Usage: safe_resident [two|refree] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))
#define CHUNK (1 << 20)
#define BLOCKS (CHUNK / 64 * 3 / 2)     /* a chunk and a half of the smaller blocks */

/* Each writes its object, so neither is a wrapper: its malloc is the site. */
NOIPA void *make_a(void) {
  void *p = malloc(64);
  if (!p) abort();
  return memset(p, 0x5a, 64);
}
NOIPA void *make_b(void) {
  void *p = malloc(128);
  if (!p) abort();
  return memset(p, 0x5a, 128);
}

static void *blocks[BLOCKS];

/* Fills a site's pool and empties it; returns a block half way into its
 * first chunk (the chunk header's page is written again when the chunk is
 * kept, purged or not). */
static void *fill_and_empty(void *(*make)(void), size_t size) {
  int n = (int)(CHUNK / size * 3 / 2);
  for (int i = 0; i < n; i++) blocks[i] = make();
  void *inside = blocks[CHUNK / size / 2];
  for (int i = 0; i < n; i++) free(blocks[i]);
  return inside;
}

static const char *residency(const void *p) {
  long page = sysconf(_SC_PAGESIZE);
  unsigned char in_core = 0;
  void *at = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
  if (mincore(at, (size_t)page, &in_core) != 0) return "unknown";
  return in_core & 1 ? "resident" : "purged";
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  char *a = fill_and_empty(make_a, 64);
  char *b = strcmp(mode, "two") == 0 ? fill_and_empty(make_b, 128) : NULL;
  printf("first site: %s\n", residency(a));
  if (b) printf("second site: %s\n", residency(b));
  if (strcmp(mode, "refree") == 0) {
    free(a);                   /* into the emptied chunk: an invalid free */
    printf("refreed\n");
    return 0;
  }
  /* The pool takes its kept chunks back: the first chunk again. */
  int reused = 0;
  uintptr_t chunk = (uintptr_t)a & ~(uintptr_t)(CHUNK - 1);
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = make_a();
    reused |= ((uintptr_t)blocks[i] & ~(uintptr_t)(CHUNK - 1)) == chunk;
  }
  printf("first site reuses its chunk: %s\n", reused ? "yes" : "no");
  for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
  return 0;
}
