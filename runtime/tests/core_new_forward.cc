// Forwarded operator new, new[] and their nothrow forms (no mode: every
// request is forwarded): test_core_forward.py counts under callgrind
// which entry point of the allocator underneath each reached. The objects
// are kept, so that nothing the compiler can see makes them unused.
#include "core_check.h"

#include <new>

#define EACH 100

int main()
{
  static void *kept[4][EACH];
  for (int i = 0; i < EACH; i++) {
    kept[0][i] = new long[1 + i % 8];                         // new[]
    kept[1][i] = new (std::nothrow) long[1 + i % 8];          // new[] (nothrow)
    kept[2][i] = new long(i);                                 // new
    kept[3][i] = new (std::nothrow) long(i);                  // new (nothrow)
    for (int k = 0; k < 4; k++) CHECK(kept[k][i] != nullptr, "form %d, object %d", k, i);
  }
  for (int i = 0; i < EACH; i++) {
    delete[] static_cast<long *>(kept[0][i]);
    delete[] static_cast<long *>(kept[1][i]);
    delete static_cast<long *>(kept[2][i]);
    delete static_cast<long *>(kept[3][i]);
  }
  return core_summary();
}
