/* Shared by the identification test programs: compare corral's group of a
 * pointer with the group the program knows it must be in. corral_group_of is
 * looked up at run time (corral.h), so the programs also run without corral. */
#ifndef IDENT_CHECK_H
#define IDENT_CHECK_H

#include "../include/corral.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

void ident_expect(const void *p, int expected);
/* Prints "checked N wrong M" and returns the exit status (0 if all right). */
int ident_report(void);

#ifdef IDENT_CHECK_DEFINE
static unsigned ident_checked, ident_wrong;

void ident_expect(const void *p, int expected)
{
  int got = corral_group_of_if_loaded(p);
  ident_checked++;
  if (got != expected) {
    if (ident_wrong < 10) fprintf(stderr, "ident: %p in group %d, expected %d\n", p, got, expected);
    ident_wrong++;
  }
}

int ident_report(void)
{
  printf("checked %u wrong %u\n", ident_checked, ident_wrong);
  return ident_wrong != 0 || ident_checked == 0;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
