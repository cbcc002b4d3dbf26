/* Shared by the dynamic-mode test programs: where a run of objects landed,
 * in the line test_dynamic.py reads ("NAME groups=G,G", dyn_helpers.series). */
#ifndef DYN_REPORT_H
#define DYN_REPORT_H
#include "../include/corral.h"

#include <stdio.h>

/* Groups of the last quarter of `ptrs`, as "G,G" on stderr. */
static void report(const char *name, void **ptrs, int n) {
  int groups[8], ngroups = 0;
  for (int i = n - n / 4; i < n; i++) {
    int g = corral_group_of_if_loaded(ptrs[i]), k = 0;
    while (k < ngroups && groups[k] != g) k++;
    if (k == ngroups && ngroups < 8) groups[ngroups++] = g;
  }
  fprintf(stderr, "%s groups=", name);
  for (int k = 0; k < ngroups; k++) fprintf(stderr, "%s%d", k ? "," : "", groups[k]);
  fputc('\n', stderr);
}
#endif
