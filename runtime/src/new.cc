// The C++ allocation operators. Written in C++ because operator new's failure
// path is defined in C++ terms: call the installed new-handler and retry,
// throw std::bad_alloc when there is none, and for the nothrow forms return
// nullptr instead of letting the handler's bad_alloc escape. libcorral.so
// therefore links libstdc++ dynamically (docs/runtime.md says why that is
// acceptable for plain C programs).
#include <cstddef>
#include <new>

extern "C" {
void *_corral_new_alloc(std::size_t size, std::size_t align, void *ret0, void *fp0);
void _corral_free(void *p);
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

}  // namespace

#define ALIGN(a) static_cast<std::size_t>(a)

CORRAL_EXPORT void *operator new(std::size_t n) { return new_at(n, 0, RET0, FP0, false); }
CORRAL_EXPORT void *operator new[](std::size_t n) { return new_at(n, 0, RET0, FP0, false); }
CORRAL_EXPORT void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
  return new_at(n, 0, RET0, FP0, true);
}
CORRAL_EXPORT void *operator new[](std::size_t n, const std::nothrow_t &) noexcept
{
  return new_at(n, 0, RET0, FP0, true);
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

CORRAL_EXPORT void operator delete(void *p) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete[](void *p) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete(void *p, std::size_t) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete[](void *p, std::size_t) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete(void *p, std::align_val_t) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete(void *p, std::size_t, std::align_val_t) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { _corral_free(p); }
CORRAL_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { _corral_free(p); }
