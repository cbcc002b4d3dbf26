// operator new at grouped frame-0 sites whose calls corral points at their
// pools (test_identify_pool_calls.py): plain, array and nothrow forms, and
// requests too large for anything, which must still throw std::bad_alloc
// through the pool call (or return nullptr for nothrow).
//
//   ident_pool_new ROUNDS
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#define NOINLINE __attribute__((noinline))

struct Node {
  Node *next;
  long a, b;
};

static std::size_t huge = std::size_t(1) << 62;   // a variable: the compiler cannot fold the request away

NOINLINE Node *site_new() { return new Node(); }                                  // group 0
NOINLINE long *site_new_array() { return new long[5]; }                           // group 1
NOINLINE Node *site_nothrow() { return new (std::nothrow) Node(); }               // group 2
NOINLINE char *site_huge() { return new char[huge]; }                             // group 0
NOINLINE char *site_huge_nothrow() { return new (std::nothrow) char[huge]; }      // group 2

int main(int argc, char **argv)
{
  int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
  int thrown = 0, nulls = 0;
  for (int i = 0; i < rounds; i++) {
    Node *n = site_new();
    long *a = site_new_array();
    Node *t = site_nothrow();
    ident_expect(n, 0);
    ident_expect(a, 1);
    ident_expect(t, 2);
    delete n;
    delete[] a;
    delete t;
    try {
      site_huge();
    } catch (const std::bad_alloc &) {
      thrown++;
    }
    nulls += site_huge_nothrow() == nullptr;
  }
  std::printf("thrown %d nulls %d\n", thrown, nulls);
  return ident_report();
}
