/* Opened by dyn_back_off.c's `dlopen` mode after dynamic mode has stepped
 * aside: its own PLT slot of malloc, bound to corral's at load, is pointed
 * past corral too. */
#include <stdlib.h>

long lib_scratch(long i) {
  long *p = malloc(40);
  if (!p) abort();
  p[3] = i;
  long v = p[3] * 2;
  free(p);
  return v;
}
