// operator new decided where malloc is (test_identify_stubs.py): past its
// gate, by the stub notes, on the ways of ways.h. Clauses: outer's call of
// middle (group 0, one site: the one-site way), nest_outer's call of
// nest_mid (group 1) and nest_mid's of nest_inner (group 2: two one-site
// clauses live at once, the noted way), pair_outer's call of pair_mid with
// pair_mid's of leaf (group 3: a clause of two sites, the stubbed way).
// leaf() alternates operator new and its nothrow form.
//   usage: ident_new_ways ROUNDS [oom]
// Prints "checked N wrong M". oom: then limits the address space and
// allocates until the allocator underneath fails a small request, which
// must reach the new-handler (twice, then it uninstalls itself) and throw
// std::bad_alloc, and makes the nothrow form return nullptr; prints
// "oom handler 2 thrown 1 nothrow null 1".
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/resource.h>

#define KEEP(p) asm volatile("" : : "r"(p) : "memory")
#define NOINLINE __attribute__((noinline))

// C names, which the test finds the call sites by.
extern "C" {
static unsigned leaf_calls;

NOINLINE void *leaf(std::size_t n)
{
  void *p = leaf_calls++ & 1 ? ::operator new(n, std::nothrow) : ::operator new(n);
  KEEP(p);
  return p;
}

NOINLINE void *middle(std::size_t n) { void *p = leaf(n); KEEP(p); return p; }
NOINLINE void *outer(std::size_t n) { void *p = middle(n); KEEP(p); return p; }
NOINLINE void *other(std::size_t n) { void *p = middle(n); KEEP(p); return p; }

NOINLINE void *nest_inner(std::size_t n) { void *p = leaf(n); KEEP(p); return p; }
NOINLINE void nest_mid(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *both = nest_inner(32), *outer_only = leaf(32);
    ident_expect(both, 2);                // first_match: the nearer site
    ident_expect(outer_only, 1);
    ::operator delete(both);
    ::operator delete(outer_only);
  }
}
NOINLINE void nest_outer(int rounds) { nest_mid(rounds); KEEP(rounds); }

NOINLINE void *pair_mid(std::size_t n) { void *p = leaf(n); KEEP(p); return p; }
NOINLINE void pair_outer(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *p = pair_mid(48), *q = leaf(48);
    ident_expect(p, 3);
    ident_expect(q, -1);                  // one of the clause's two sites
    ::operator delete(p);
    ::operator delete(q);
  }
}
NOINLINE void *nothrow_leaf(std::size_t n) { void *p = ::operator new(n, std::nothrow); KEEP(p); return p; }
}

static int handler_calls;
static void handler()
{
  if (++handler_calls == 2) std::set_new_handler(nullptr);
}

static void oom()
{
  long pages = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  struct rlimit r = {static_cast<rlim_t>(pages) * 4096 + (64 << 20), RLIM_INFINITY};
  if (pages == 0 || setrlimit(RLIMIT_AS, &r) != 0) std::exit(5);
  std::set_new_handler(handler);
  bool thrown = false;
  try {
    for (;;) KEEP(other(64));                   // ungrouped, as the clause's site is not live
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  std::printf("oom handler %d thrown %d nothrow null %d\n", handler_calls, thrown, nothrow_leaf(64) == nullptr);
}

int main(int argc, char **argv)
{
  int rounds = argc > 1 ? std::atoi(argv[1]) : 1000;
  for (int i = 0; i < rounds; i++) {
    void *p = outer(24), *q = other(24);
    ident_expect(p, 0);
    ident_expect(q, -1);
    ::operator delete(p);
    ::operator delete(q);
  }
  nest_outer(rounds);
  pair_outer(rounds);
  if (argc > 2 && !std::strcmp(argv[2], "oom")) oom();
  return ident_report();
}
