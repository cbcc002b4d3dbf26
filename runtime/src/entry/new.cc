// The C++ allocation operators. On failure operator new does what C++
// requires: call the installed new-handler and retry, throw std::bad_alloc
// when there is none; the nothrow forms return nullptr instead of letting
// the handler's exception escape. Built without exceptions and without
// libstdc++: the C++ runtime the program uses (libstdc++ or libc++) is looked
// up on the failure path, and its own nothrow operator, which calls ours in
// a try block, does the catching (docs/runtime.md, "C++ operators").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <dlfcn.h>

#include "attributes.h"
#include "cxx.h"
#include "gates.h"
extern "C" {
#include "internal.h"
#include "next.h"
}

#define RET0 __builtin_return_address(0)
#define FP0 __builtin_frame_address(0)

namespace {

// The C++ runtime's entry points, looked up when an allocation first fails
// (a C program that never calls operator new loads no C++ runtime).
struct cxx_runtime {
  std::new_handler (*get_new_handler)();
  void (*throw_bad_alloc)();                                            // does not return
  void *(*nothrow_new)(std::size_t, const std::nothrow_t &);
  void *(*nothrow_new_aligned)(std::size_t, std::align_val_t, const std::nothrow_t &);
};

const cxx_runtime &cxx()
{
  static cxx_runtime r;
  static int looked;
  if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
    cxx_runtime found;
    found.get_new_handler = reinterpret_cast<std::new_handler (*)()>(dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv"));
    found.throw_bad_alloc = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv"));
    // The nothrow operators of the library that holds the new-handler: the
    // next definition after ours may be another allocator's (mimalloc and
    // jemalloc define them too, and do not catch). Opened by the real
    // dlopen (ours rescans modules), without loading anything.
    void *lib = nullptr;
    Dl_info info;
    auto real_dlopen = reinterpret_cast<void *(*)(const char *, int)>(dlsym(RTLD_NEXT, "dlopen"));
    if (found.get_new_handler && real_dlopen && dladdr(reinterpret_cast<void *>(found.get_new_handler), &info) &&
        info.dli_fname)
      lib = real_dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    found.nothrow_new = reinterpret_cast<void *(*)(std::size_t, const std::nothrow_t &)>(
        lib ? dlsym(lib, "_ZnwmRKSt9nothrow_t") : nullptr);
    found.nothrow_new_aligned = reinterpret_cast<void *(*)(std::size_t, std::align_val_t, const std::nothrow_t &)>(
        lib ? dlsym(lib, "_ZnwmSt11align_val_tRKSt9nothrow_t") : nullptr);
    r = found;                       // threads that race store the same values
    __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
  }
  return r;
}

// Only reached when the first attempt failed.
__attribute__((noinline)) void *new_failed(std::size_t size, std::size_t align, void *ret0, void *fp0,
                                           bool nothrow)
{
  const cxx_runtime &rt = cxx();
  if (nothrow) {
    // The runtime's nothrow operator calls the throwing one (ours: the
    // handler loop below) and turns whatever it throws into nullptr.
    const std::nothrow_t tag{};      // std::nothrow itself is the runtime's object
    if (align && rt.nothrow_new_aligned) return rt.nothrow_new_aligned(size, std::align_val_t(align), tag);
    if (!align && rt.nothrow_new) return rt.nothrow_new(size, tag);
  }
  for (;;) {
    std::new_handler handler = rt.get_new_handler ? rt.get_new_handler() : nullptr;
    if (!handler) {
      if (nothrow) return nullptr;
      if (rt.throw_bad_alloc) rt.throw_bad_alloc();
      _corral_warn("operator new: out of memory, and no C++ runtime to throw std::bad_alloc; aborting");
      std::abort();
    }
    handler();
    if (void *p = _corral_new_alloc(size, align, ret0, fp0)) return p;
  }
}

inline void *new_at(std::size_t size, std::size_t align, void *ret0, void *fp0, bool nothrow)
{
  void *p = _corral_new_alloc(size, align, ret0, fp0);
  if (CORRAL_LIKELY(p != nullptr)) return p;
  return new_failed(size, align, ret0, fp0, nothrow);
}

// The unaligned operators take malloc's short way (malloc.c): a size
// corral cannot group goes straight to the next allocator, and only a
// request it failed continues in the full way (_corral_new_rest). Any other
// goes past the gate by a tail call (_corral_new_gated, new_ways.c), which
// reads the gate once: dynamic mode's way, malloc's ways or the full way.
// Their return and frame address are then the program's call. The nothrow
// forms have a noexcept twin: a noexcept caller could not jump to a callee
// that may throw.

// Whether n goes straight to the next allocator.
inline bool forwarded(std::size_t n)
{
  return CORRAL_LIKELY(n >= __atomic_load_n(&_corral_gates.forward_from, __ATOMIC_ACQUIRE) ||
                       _corral_gate_open(&_corral_gates.on_new));
}

}  // namespace

// Also where a pool call that missed continues (call_ways.c).
extern "C" __attribute__((noinline)) void *_corral_new_rest(std::size_t n) { return new_at(n, 0, RET0, FP0, false); }
extern "C" __attribute__((noinline)) void *_corral_new_rest_nothrow(std::size_t n) noexcept
{
  return new_at(n, 0, RET0, FP0, true);
}

// Where the PLT slots of operator new and new[] (and their nothrow forms)
// lead once dynamic mode has stepped aside, over an allocator whose own
// operators corral does not trust (plt_bypass.h): its malloc, tested for
// NULL, without the entry point's compares.
extern "C" void *_corral_new_forward(std::size_t n) { return _corral_next_new(n, nullptr, _corral_new_rest); }
extern "C" void *_corral_new_forward_nothrow(std::size_t n, const std::nothrow_t &tag) noexcept
{
  return _corral_next_new_nothrow(n, nullptr, &tag, _corral_new_rest_nothrow);
}

#define ALIGN(a) static_cast<std::size_t>(a)

// A forwarded request goes to the next allocator's own operator by a tail
// jump where it has one that fails as C++ requires (next.h: jemalloc's),
// else to its malloc, tested for NULL (_corral_next_new).
CORRAL_EXPORT void *operator new(std::size_t n)
{
  if (forwarded(n)) return _corral_next_new(n, _corral_next.new_object, _corral_new_rest);
  return _corral_new_gated(n);
}
CORRAL_EXPORT void *operator new[](std::size_t n)
{
  if (forwarded(n)) return _corral_next_new(n, _corral_next.new_array, _corral_new_rest);
  return _corral_new_gated(n);
}
CORRAL_EXPORT void *operator new(std::size_t n, const std::nothrow_t &tag) noexcept
{
  if (forwarded(n)) return _corral_next_new_nothrow(n, _corral_next.new_object_nothrow, &tag, _corral_new_rest_nothrow);
  return _corral_new_gated_nothrow(n);
}
CORRAL_EXPORT void *operator new[](std::size_t n, const std::nothrow_t &tag) noexcept
{
  if (forwarded(n)) return _corral_next_new_nothrow(n, _corral_next.new_array_nothrow, &tag, _corral_new_rest_nothrow);
  return _corral_new_gated_nothrow(n);
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

// Every operator delete is free itself (malloc.c, an alias of each).
