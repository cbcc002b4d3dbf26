/* Identification entry points. First slice: no plan is ever loaded, every
 * allocation is ungrouped; the real loader and matcher follow. */
#include "identify.h"

void _corral_ident_init(void) {}

int _corral_identify(void *ret0, void *fp0, size_t size)
{
  (void)ret0; (void)fp0; (void)size;
  return -1;
}

unsigned _corral_group_count(void) { return 0; }

const char *_corral_group_name(unsigned g) { (void)g; return 0; }

void _corral_ident_after_dlopen(void) {}

void _corral_ident_stats_json(int fd) { (void)fd; }

void _corral_ident_stats_text(int fd) { (void)fd; }
