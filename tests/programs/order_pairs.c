/* Objects from two call sites, made in turns, for bench/tools/order_bound.c:
 * prints where the second site's object and the first site's next object
 * fall against the one made before each, then checks calloc, realloc,
 * large and aligned requests, and prints a checksum of the contents. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not tail calls, and not folded into one: each site is one return
 * address whoever calls it. */
__attribute__((noipa)) static char *from_first(size_t n)
{
  char *p = malloc(n);
  if (!p) abort();
  return p;
}

__attribute__((noipa)) static char *from_second(size_t n)
{
  char *p = malloc(n);
  if (!p) abort();
  return p;
}

int main(void)
{
  char *a = from_first(24), *b = from_second(24), *c = from_first(24);
  printf("second after first: %td\n", b - a);
  printf("first after first: %td\n", c - a);
  uint64_t sum = 0;
  for (int i = 0; i < 1000; i++) {
    char *p = from_first(40), *q = from_second(8);
    memset(p, i & 0xff, 40);
    memset(q, (i * 3) & 0xff, 8);
    sum = sum * 31 + (unsigned char)p[39] + (unsigned char)q[7];
    if (i % 3 == 0) free(p);
  }
  unsigned *z = calloc(100, sizeof *z);
  for (int i = 0; i < 100; i++) sum += z[i];
  char *r = malloc(10);
  strcpy(r, "ninechars");
  for (size_t n = 16; n <= (1u << 16); n *= 4) {
    r = realloc(r, n);
    sum = sum * 31 + (unsigned)strlen(r);
  }
  char *big = malloc(1 << 20);
  memset(big, 7, 1 << 20);
  sum += (unsigned char)big[(1 << 20) - 1];
  void *al = NULL;
  if (posix_memalign(&al, 256, 100) || ((uintptr_t)al & 255)) return 1;
  free(al);
  free(big);
  free(r);
  free(z);
  printf("checksum %llx\n", (unsigned long long)sum);
  return 0;
}
