// Every C++ operator new/delete, alignment of the aligned forms, and the
// failure semantics: new-handler called and retried, std::bad_alloc thrown,
// nothrow forms return nullptr (also when the handler throws).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

extern "C" {
#include "core_check.h"
}

static volatile std::size_t huge = SIZE_MAX / 2;
static int handler_calls;

static void counting_handler()
{
  if (++handler_calls == 3) std::set_new_handler(nullptr);   // then bad_alloc
}

static void throwing_handler()
{
  handler_calls++;
  throw std::bad_alloc();
}

static void freeing_handler();
static void *reserve_block;
static void freeing_handler()
{
  // The classic use: give memory back and let new retry.
  handler_calls++;
  std::free(reserve_block);
  reserve_block = nullptr;
  std::set_new_handler(nullptr);
}

struct alignas(64) Wide { char bytes[64]; };
struct alignas(8192) Huge { char bytes[100]; };

int main()
{
  const bool grouped = std::getenv("EXPECT_GROUPED") && std::atoi(std::getenv("EXPECT_GROUPED"));
  // corral's largest grouped size, as core_api takes it
  const std::size_t max_size = std::getenv("MAX_SIZE") ? std::atol(std::getenv("MAX_SIZE")) : 4096;
  for (std::size_t n = 1; n < 10000; n = n * 3 + 1) {
    char *a = new char[n];
    CHECK((group_of(a) >= 0) == (grouped && n <= max_size), "new[] %zu group %d", n, group_of(a));
    delete[] a;
    int *b = new int(7);
    CHECK(*b == 7 && (group_of(b) >= 0) == grouped, "new int");
    delete b;
    void *c = ::operator new(n, std::nothrow);
    CHECK(c != nullptr, "nothrow new %zu", n);
    ::operator delete(c, std::nothrow);
    void *d = ::operator new[](n, std::nothrow);
    ::operator delete[](d, n);
  }
  for (std::size_t align = 16; align <= 16384; align *= 2) {
    void *p = ::operator new(100, std::align_val_t(align));
    CHECK(((std::uintptr_t)p & (align - 1)) == 0, "aligned new %zu: %p", align, p);
    CHECK((group_of(p) >= 0) == (grouped && align <= 4096), "aligned new %zu group %d", align, group_of(p));
    ::operator delete(p, std::align_val_t(align));
    p = ::operator new[](100, std::align_val_t(align), std::nothrow);
    CHECK(p && ((std::uintptr_t)p & (align - 1)) == 0, "aligned nothrow new[] %zu", align);
    ::operator delete[](p, std::align_val_t(align), std::nothrow);
    p = ::operator new[](200, std::align_val_t(align));
    CHECK(((std::uintptr_t)p & (align - 1)) == 0, "aligned new[] %zu", align);
    ::operator delete[](p, 200, std::align_val_t(align));
  }
  Wide *w = new Wide[3];
  CHECK(((std::uintptr_t)w & 63) == 0, "alignas(64) new[]");
  delete[] w;
  Huge *h = new Huge;
  CHECK(((std::uintptr_t)h & 8191) == 0 && group_of(h) < 0, "alignas(8192) new");
  delete h;

  // failure: no handler -> bad_alloc
  bool thrown = false;
  try { void *p = ::operator new(huge); ::operator delete(p); } catch (const std::bad_alloc &) { thrown = true; }
  CHECK(thrown, "new(huge) throws bad_alloc");
  thrown = false;
  try { void *p = ::operator new[](huge, std::align_val_t(64)); ::operator delete[](p); } catch (const std::bad_alloc &) { thrown = true; }
  CHECK(thrown, "aligned new[](huge) throws bad_alloc");
  CHECK(::operator new(huge, std::nothrow) == nullptr, "nothrow new(huge) is null");
  CHECK(::operator new[](huge, std::align_val_t(32), std::nothrow) == nullptr, "aligned nothrow new[](huge) is null");

  // the handler is called until it uninstalls itself, then bad_alloc
  handler_calls = 0;
  std::set_new_handler(counting_handler);
  thrown = false;
  try { void *p = ::operator new(huge); ::operator delete(p); } catch (const std::bad_alloc &) { thrown = true; }
  CHECK(thrown && handler_calls == 3, "new-handler called 3 times (%d), then bad_alloc", handler_calls);

  // nothrow: a handler that throws bad_alloc makes the result null
  handler_calls = 0;
  std::set_new_handler(throwing_handler);
  CHECK(::operator new(huge, std::nothrow) == nullptr && handler_calls == 1, "nothrow with throwing handler");
  std::set_new_handler(nullptr);

  // a handler that frees memory: operator new retries and the (smaller) request fails again -> throw
  reserve_block = std::malloc(1000);
  handler_calls = 0;
  std::set_new_handler(freeing_handler);
  thrown = false;
  try { void *p = ::operator new(huge); ::operator delete(p); } catch (const std::bad_alloc &) { thrown = true; }
  CHECK(thrown && handler_calls == 1 && reserve_block == nullptr, "freeing handler ran once");
  return core_summary();
}
