// Dynamic mode through operator new (docs/dynamic.md, "The fast way"): list
// nodes made by `new` and by the nothrow `new` are kept, so their contexts
// get pools that the fast way pops; scratch arrays from `new[]` die at
// once, so their pool is given back and that call is pointed at the none
// way. A request the allocator underneath cannot serve still throws
// std::bad_alloc, or gives nullptr to the nothrow form. Each `new` is in a
// function of its own that does not return the object (so it is no
// wrapper, and a compiler that copies the loop cannot copy the call).
#include "../include/corral.h"

#include <cstdint>
#include <cstdio>
#include <new>

#define NOIPA __attribute__((noipa))

namespace {
struct Node {
  Node *next;
  long value;
};
constexpr long kRounds = 200000;
}  // namespace

NOIPA int scratch_round(long i, unsigned long *hash) {
  char *s = new char[40];
  std::snprintf(s, 40, "item %ld", i);
  for (char *c = s; *c; c++) *hash = *hash * 31 + static_cast<unsigned char>(*c);
  int pooled = corral_group_of_if_loaded(s) >= 0;
  delete[] s;
  return pooled;
}

NOIPA void push(Node **list, long i) { *list = new Node{*list, i}; }

NOIPA int push_quietly(Node **list, long i) {
  Node *n = new (std::nothrow) Node{*list, i};
  if (!n) return 0;
  *list = n;
  return 1;
}

static int pooled_among_first(const Node *n, int count) {
  int pooled = 0;
  for (int k = 0; k < count && n; k++, n = n->next) pooled += corral_group_of_if_loaded(n) >= 0;
  return pooled;
}

int main() {
  Node *list = nullptr, *quiet = nullptr;
  unsigned long hash = 0;
  int scratch_pooled = 0;
  for (long i = 0; i < kRounds; i++) {
    int pooled = scratch_round(i, &hash);
    if (i >= kRounds - 100) scratch_pooled += pooled;
    push(&list, i);
    if (!push_quietly(&quiet, -i)) return 1;
  }
  int threw = 0;
  try {
    char *volatile huge = new char[SIZE_MAX / 4];
    huge[0] = 1;
  } catch (const std::bad_alloc &) {
    threw = 1;
  }
  char *volatile none = new (std::nothrow) char[SIZE_MAX / 4];
  std::fprintf(stderr, "last list_pooled=%d quiet_pooled=%d scratch_pooled=%d threw=%d nothrow_null=%d\n",
               pooled_among_first(list, 100), pooled_among_first(quiet, 100), scratch_pooled, threw,
               none == nullptr);
  long sum = 0;
  for (Node *n = list; n;) { Node *next = n->next; sum += n->value; delete n; n = next; }
  for (Node *n = quiet; n;) { Node *next = n->next; sum += n->value; delete n; n = next; }
  std::printf("hash %lu sum %ld\n", hash, sum);
  return 0;
}
