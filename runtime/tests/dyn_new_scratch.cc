// Scratch objects made with operator new and its nothrow form, each deleted
// before the next is made, from calls of this file's own: dynamic mode gives
// both pools back (their live set is one object) and points both calls at
// their none ways (docs/dynamic.md, "When a context gets a pool").
// test_dynamic.py counts under callgrind whether the calls then still enter
// corral's none way or jump straight to the allocator underneath's operators;
// a list made first keeps its pool and is deleted at the end.
#include <cstdio>
#include <new>

#define ROUNDS 200000
#define NOIPA __attribute__((noipa))

struct node { node *next; long value; };

// Each object is seen here, so that the compiler cannot drop a new and its
// delete as a pair.
node *volatile last;

NOIPA static long churn(long rounds)
{
  long sum = 0;
  for (long i = 0; i < rounds; i++) {
    node *n = new node{nullptr, i};
    last = n;
    sum += n->value;
    delete n;
  }
  return sum;
}

NOIPA static long churn_nothrow(long rounds)
{
  long sum = 0;
  for (long i = 0; i < rounds; i++) {
    node *n = new (std::nothrow) node{nullptr, i};
    if (!n) return -1;
    last = n;
    sum += n->value;
    delete n;
  }
  return sum;
}

// A list made first at a call of its own, which keeps its pool, and only
// deleted once the churns are over: after dynamic mode has stepped aside,
// its pooled nodes still come back to corral (test_dynamic_bypass.py).
NOIPA static node *make_list(long n)
{
  node *list = nullptr;
  for (long i = 0; i < n; i++) list = new node{list, i};
  return list;
}

NOIPA static long delete_list(node *list)
{
  long sum = 0;
  while (list) {
    node *next = list->next;
    sum += list->value;
    delete list;
    list = next;
  }
  return sum;
}

int main()
{
  long want = (long)ROUNDS * (ROUNDS - 1) / 2;
  node *list = make_list(2000);
  int failed = (churn(ROUNDS) != want) + (churn_nothrow(ROUNDS) != want);
  failed += delete_list(list) != 2000L * 1999 / 2;
  std::printf("%d passed, %d failed\n", 3 - failed, failed);
  return failed != 0;
}
