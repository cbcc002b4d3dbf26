// The C++ allocation operators. Written in C++ because operator new's failure
// path is defined in C++ terms: call the installed new-handler and retry,
// throw std::bad_alloc when there is none, and for the nothrow forms return
// nullptr instead of letting the handler's bad_alloc escape. libcorral.so
// therefore links libstdc++ dynamically (docs/runtime.md says why that is
// acceptable for plain C programs).
#include <cstddef>
#include <cstdint>
#include <new>

#include "attributes.h"
#include "gates.h"
extern "C" {
#include "next.h"
}

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
  if (CORRAL_LIKELY(p != nullptr)) return p;
  return new_failed(size, align, ret0, fp0, nothrow);
}

// The unaligned operators take malloc's short way (interpose.c): a size
// corral cannot group goes straight to the next allocator. The rest, and a
// request that failed there, continue in _corral_new_rest, entered by a tail call so
// that its return and frame address are the program's call. The nothrow
// forms have a noexcept twin: a noexcept caller could not jump to a callee
// that may throw.

// The next allocator's block; nullptr when corral may group n or it failed.
inline void *from_next(std::size_t n)
{
  if (CORRAL_LIKELY(n >= __atomic_load_n(&_corral_gates.forward_from, __ATOMIC_ACQUIRE) ||
                    _corral_gate_open(&_corral_gates.on_new)))
    return _corral_next.malloc(n);
  return nullptr;
}

// Dynamic mode decides the rest on its own fast way (dynamic.c).
inline bool dynamic_gate() { return __atomic_load_n(&_corral_gates.on_new, __ATOMIC_RELAXED) == CORRAL_GATE_DYNAMIC; }

// free's way, which hands the next allocator's pointers over first.
inline void delete_at(void *p) noexcept { _corral_free(p); }

}  // namespace

// Also where a pool call that missed continues (pool_call.c).
extern "C" __attribute__((noinline)) void *_corral_new_rest(std::size_t n) { return new_at(n, 0, RET0, FP0, false); }
extern "C" __attribute__((noinline)) void *_corral_new_rest_nothrow(std::size_t n) noexcept
{
  return new_at(n, 0, RET0, FP0, true);
}

#define ALIGN(a) static_cast<std::size_t>(a)

CORRAL_EXPORT void *operator new(std::size_t n)
{
  if (void *p = from_next(n)) return p;
  if (dynamic_gate()) return _corral_dyn_new(n);
  return _corral_new_rest(n);
}
CORRAL_EXPORT void *operator new[](std::size_t n)
{
  if (void *p = from_next(n)) return p;
  if (dynamic_gate()) return _corral_dyn_new(n);
  return _corral_new_rest(n);
}
CORRAL_EXPORT void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
  if (void *p = from_next(n)) return p;
  if (dynamic_gate()) return _corral_dyn_new_nothrow(n);
  return _corral_new_rest_nothrow(n);
}
CORRAL_EXPORT void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
  if (void *p = from_next(n)) return p;
  if (dynamic_gate()) return _corral_dyn_new_nothrow(n);
  return _corral_new_rest_nothrow(n);
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
