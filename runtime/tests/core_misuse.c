/* Misuse of grouped memory must not crash or corrupt: a double free and an
 * interior-pointer free are reported and ignored; later allocations work. */
#include "core_check.h"

#include <string.h>

int main(void)
{
  char *a = malloc(64), *b = malloc(64);
  CHECK(group_of(a) >= 0 && group_of(b) >= 0, "grouped");
  free(a);
  free(a);                                /* double free */
  free(b + 16);                           /* not an object start */
  char *c = malloc(64), *d = malloc(64);
  CHECK(c != d, "double free did not hand out one slot twice: %p %p", c, d);
  memset(c, 1, 64);
  memset(d, 2, 64);
  CHECK(b[0] == b[0] && c[63] == 1 && d[0] == 2, "contents");
  free(b);
  free(c);
  free(d);
  return core_summary();
}
