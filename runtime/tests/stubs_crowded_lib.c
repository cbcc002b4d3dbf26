/* A library linked at a fixed address (stubs_crowded.c loads it into a
 * neighbourhood with no room for stubs). */
#include <stdlib.h>

void *crowded_alloc(size_t n)
{
  return malloc(n);
}
