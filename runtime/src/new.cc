// The C++ allocation operators. Written in C++ because operator new's failure
// path is defined in C++ terms: call the installed new-handler and retry,
// throw std::bad_alloc when there is none, and for the nothrow forms return
// nullptr instead of letting the handler's bad_alloc escape. libcorral.so
// therefore links libstdc++ dynamically (docs/runtime.md says why that is
// acceptable for plain C programs).
#include <cstddef>
#include <cstdint>
#include <new>

extern "C" {
#include "next.h"
#pragma GCC visibility push(hidden)
void *_corral_new_alloc(std::size_t size, std::size_t align, void *ret0, void *fp0);
void _corral_free(void *p) noexcept;            // C: never throws
extern std::size_t _corral_forward_from;     // init.h
extern std::uintptr_t _corral_mine_lo, _corral_mine_hi;   // heap.h
#pragma GCC visibility pop
}

#define CORRAL_EXPORT __attribute__((visibility("default")))
#define RET0 __builtin_return_address(0)
#define FP0 __builtin_frame_address(0)

namespace {

// Only reached when the first attempt failed.
__attribute__((noinline)) void *new_failed(std::size_t size, std::size_t align, void *ret0, void *fp0,
                                           bool nothrow)
{
  for (;;) {
    std::new_handler handler = std::get_new_handler();
    if (!handler) {
      if (nothrow) return nullptr;
      throw std::bad_alloc();
    }
    if (nothrow) {
      try {
        handler();
      } catch (const std::bad_alloc &) {
        return nullptr;
      }
    } else {
      handler();
    }
    if (void *p = _corral_new_alloc(size, align, ret0, fp0)) return p;
  }
}

inline void *new_at(std::size_t size, std::size_t align, void *ret0, void *fp0, bool nothrow)
{
  void *p = _corral_new_alloc(size, align, ret0, fp0);
  if (__builtin_expect(p != nullptr, 1)) return p;
  return new_failed(size, align, ret0, fp0, nothrow);
}

// The unaligned operators take malloc's short way (interpose.c): a size
// corral cannot group goes straight to the next allocator. The rest, and a
// request that failed there, continue in new_rest, entered by a tail call so
// that its return and frame address are the program's call. The nothrow
// forms have a noexcept twin: a noexcept caller could not jump to a callee
// that may throw.

// The next allocator's block; nullptr when corral may group n or it failed.
inline void *from_next(std::size_t n)
{
  if (__builtin_expect(n >= __atomic_load_n(&_corral_forward_from, __ATOMIC_ACQUIRE), 1))
    return _corral_next.malloc(n);
  return nullptr;
}

__attribute__((noinline)) void *new_rest(std::size_t n) { return new_at(n, 0, RET0, FP0, false); }
__attribute__((noinline)) void *new_rest_nothrow(std::size_t n) noexcept { return new_at(n, 0, RET0, FP0, true); }

// free's short way. The next allocator's free is C and never throws; saying
// so lets the noexcept operators jump to it instead of calling it.
inline void delete_at(void *p) noexcept
{
  using free_fn = void (*)(void *) noexcept;
  auto a = reinterpret_cast<std::uintptr_t>(p);     // _corral_foreign (heap.h)
  if (__builtin_expect(a < __atomic_load_n(&_corral_mine_lo, __ATOMIC_ACQUIRE) ||
                       a >= __atomic_load_n(&_corral_mine_hi, __ATOMIC_ACQUIRE), 1))
    return reinterpret_cast<free_fn>(_corral_next.free)(p);
  _corral_free(p);
}

}  // namespace

#define ALIGN(a) static_cast<std::size_t>(a)

CORRAL_EXPORT void *operator new(std::size_t n)
{
  if (void *p = from_next(n)) return p;
  return new_rest(n);
}
CORRAL_EXPORT void *operator new[](std::size_t n)
{
  if (void *p = from_next(n)) return p;
  return new_rest(n);
}
CORRAL_EXPORT void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
  if (void *p = from_next(n)) return p;
  return new_rest_nothrow(n);
}
CORRAL_EXPORT void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
  if (void *p = from_next(n)) return p;
  return new_rest_nothrow(n);
}
CORRAL_EXPORT void *operator new(std::size_t n, std::align_val_t a) { return new_at(n, ALIGN(a), RET0, FP0, false); }
CORRAL_EXPORT void *operator new[](std::size_t n, std::align_val_t a) { return new_at(n, ALIGN(a), RET0, FP0, false); }
CORRAL_EXPORT void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
  return new_at(n, ALIGN(a), RET0, FP0, true);
}
CORRAL_EXPORT void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
  return new_at(n, ALIGN(a), RET0, FP0, true);
}

CORRAL_EXPORT void operator delete(void *p) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete[](void *p) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete(void *p, std::size_t) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete[](void *p, std::size_t) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete(void *p, std::align_val_t) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete(void *p, std::size_t, std::align_val_t) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { delete_at(p); }
CORRAL_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { delete_at(p); }
