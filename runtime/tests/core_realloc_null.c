/* realloc of NULL, which C defines as malloc, and realloc of a block of the
 * allocator underneath, forwarded (no mode, or dynamic mode's sizes above
 * its pools'): test_core_forward.py counts under callgrind which entry point
 * of the allocator underneath each reached. NULL comes through a volatile
 * so that the compiler cannot make the call a malloc itself. */
#include "core_check.h"

#include <string.h>

#define NULLS 200
#define GROWS 50
#define CHURN 20000

static void *volatile none;

int main(void)
{
  static unsigned char *kept[NULLS];
  for (int i = 0; i < NULLS; i++) {
    kept[i] = realloc(none, 16 + i % 100);
    CHECK(kept[i] != NULL, "realloc(NULL, %d)", 16 + i % 100);
    if (kept[i]) memset(kept[i], i, 16);
  }
  for (int i = 0; i < GROWS; i++) {          /* above every pool's size: forwarded in dynamic mode too */
    unsigned char *q = realloc(kept[i], 300 + i);
    CHECK(q != NULL && q[0] == (unsigned char)i && q[15] == (unsigned char)i, "realloc grow %d keeps the bytes", i);
    if (q) kept[i] = q;
  }
  for (int i = 0; i < NULLS; i++) free(kept[i]);
  /* One site's objects, each freed at once: dynamic mode gives its pool
   * back (its live set is small) and forwards the site's later calls by
   * its settled decision, or steps aside. */
  for (int i = 0; i < CHURN; i++) {
    unsigned char *p = realloc(none, 24);
    CHECK(p != NULL, "churn %d", i);
    if (p) p[23] = 1;
    free(p);
  }
  return core_summary();
}
