// A dangling pointer through C++ new/delete (test_safe.py): a Patient is
// deleted, 4096 Accounts of the same size are made at another site, then the
// program writes through the dangling Patient pointer and prints
// "corrupted" if any Account changed, else "intact".
#include <cstdio>
#include <cstring>

struct Patient {
  void *vptr_like[2];
  char notes[48];
};
struct Account {
  char digits[64];
};
static_assert(sizeof(Patient) == sizeof(Account), "same size class");

static Account *accounts[4096];

__attribute__((noinline)) static Patient *admit() { return new Patient(); }
__attribute__((noinline)) static Account *open_account() { return new Account(); }
__attribute__((noinline)) static void write_notes(Patient *p) { std::memset(p->notes, 'A', sizeof p->notes); }

int main()
{
  Patient *p = admit();
  delete p;
  for (auto &a : accounts) {
    a = open_account();
    std::memset(a->digits, 'B', sizeof a->digits);
  }
  write_notes(p);
  for (auto *a : accounts)
    for (char d : a->digits)
      if (d != 'B') return std::puts("corrupted"), 0;
  std::puts("intact");
  return 0;
}
