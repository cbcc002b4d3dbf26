// Clause sites redirected to stubs (test_identify_stubs.py): every way a
// call through a site can be left or re-entered. Each *_outer function's call
// of the next level is a clause site of its own group; allocations below it
// must land in that group, allocations elsewhere in none.
//   usage: ident_stubs LIB_B_PATH SITE_HEX STUBS INDIRECT
// SITE: outer's site, offset from the executable's base; prints "stub_fde N",
// N saying whether the call there now leads to code with unwind information
// other than `middle`, then "checked N wrong M". STUBS 0: the walk decides,
// and it stops at a signal frame. INDIRECT 0: the plan has no clause for the
// indirect call's site.
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <link.h>
#include <pthread.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

// No tail calls: each call below stays on the stack.
#define KEEP(p) asm volatile("" : : "r"(p) : "memory")

extern "C" {
void *lib_a_outer(std::size_t n);
void *lib_a_middle(std::size_t n);
// libgcc's lookup of unwind information by pc (its bases struct: three pointers).
struct eh_bases { void *tbase, *dbase, *func; };
void *_Unwind_Find_FDE(void *pc, struct eh_bases *bases);

__attribute__((noinline)) void *leaf(std::size_t n) { void *p = std::malloc(n); KEEP(p); return p; }
__attribute__((noinline)) void *middle(std::size_t n) { void *p = leaf(n); KEEP(p); return p; }
__attribute__((noinline)) void *outer(std::size_t n) { void *p = middle(n); KEEP(p); return p; }
__attribute__((noinline)) void *other(std::size_t n) { void *p = middle(n); KEEP(p); return p; }

// Recursion through a site: level d < TOP was called through it.
enum { TOP = 5 };
__attribute__((noinline)) void rec(int d)
{
  if (d > 0) {
    rec(d - 1);
    KEEP(d);
  }
  // Twice: the first finds the inner call's note stale, the second must
  // still see the outer call.
  for (int i = 0; i < 2; i++) {
    void *p = leaf(40);
    ident_expect(p, d < TOP ? 1 : -1);
    std::free(p);
  }
}

// longjmp out of a live site.
static std::jmp_buf jump_back;
__attribute__((noinline)) void jump_inner(void)
{
  void *p = leaf(24);
  ident_expect(p, 2);
  std::free(p);
  std::longjmp(jump_back, 1);
}
__attribute__((noinline)) void jump_outer(void) { jump_inner(); KEEP(0); }

// A signal handler that allocates while a site is live, through a site of
// its own and not.
static volatile std::sig_atomic_t handled;
static int stubs_on, indirect_group = 5;
static void handler(int)
{
  void *p = outer(24), *q = leaf(24);
  ident_expect(p, 0);
  ident_expect(q, stubs_on ? 3 : -1);   // sig_outer's site is on the stack, beyond the signal frame
  std::free(p);
  std::free(q);
  handled++;
}
static int signal_to_raise = SIGUSR1;
__attribute__((noinline)) void sig_inner(void)
{
  std::raise(signal_to_raise);
  void *p = leaf(24);
  ident_expect(p, 3);
  std::free(p);
}
__attribute__((noinline)) void sig_outer(void) { sig_inner(); KEEP(0); }

// The same on an alternate signal stack that lies just above the thread's
// own stack. From there the notes of the thread's stack cannot be judged:
// an allocation below no site of the handler's own is walked, and the walk
// stops at the signal frame; the interrupted site must stay live.
static void alt_handler(int)
{
  void *q = leaf(24), *p = outer(24);
  ident_expect(q, -1);
  ident_expect(p, 0);
  std::free(p);
  std::free(q);
  handled++;
}

enum { ALT_THREAD_STACK = 1 << 20, ALT_SIGNAL_STACK = 1 << 16 };
static void *alt_stack_thread(void *alt)
{
  stack_t on = {};
  on.ss_sp = alt;
  on.ss_size = ALT_SIGNAL_STACK;
  sigaltstack(&on, nullptr);
  for (int i = 0; i < 20; i++) sig_outer();
  return nullptr;
}

static int alt_stack_rounds(void)
{
  char *region = static_cast<char *>(mmap(nullptr, ALT_THREAD_STACK + ALT_SIGNAL_STACK, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (region == MAP_FAILED) return -1;
  struct sigaction sa = {};
  sa.sa_handler = alt_handler;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGUSR2, &sa, nullptr);
  signal_to_raise = SIGUSR2;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, region, ALT_THREAD_STACK);
  pthread_t t;
  if (pthread_create(&t, &attr, alt_stack_thread, region + ALT_THREAD_STACK) != 0) return -1;
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  signal_to_raise = SIGUSR1;
  return 0;
}

// A site that cannot be redirected: an indirect call.
void *(*volatile indirect_target)(std::size_t) = middle;
__attribute__((noinline)) void *indirect_outer(std::size_t n) { void *p = indirect_target(n); KEEP(p); return p; }

// A C++ exception thrown through a live site and caught above it.
__attribute__((noinline)) void throw_inner(void)
{
  void *p = leaf(24);
  ident_expect(p, 6);
  std::free(p);
  throw std::runtime_error("through the site");
}
__attribute__((noinline)) void throw_outer(void) { throw_inner(); KEEP(0); }
}

// Sites of one function called in turn (group 8 through middle, group 9
// through leaf), and one of another function (sib_elsewhere, group 8) whose
// note is left behind when it returns: each allocation must see only the
// site it is under, whichever notes were taken before.
extern "C" {
__attribute__((noinline)) void *sib_elsewhere(std::size_t n) { void *p = leaf(n); KEEP(p); return p; }
__attribute__((noinline)) void sibling_rounds(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *e = sib_elsewhere(32);
    void *a = middle(32);
    void *b = leaf(32);
    void *c = other(32);
    ident_expect(e, 8);
    ident_expect(a, 8);
    ident_expect(b, 9);
    ident_expect(c, -1);
    std::free(a); std::free(b); std::free(c); std::free(e);
  }
}
}

static void basic_rounds(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *a = outer(24), *b = other(24), *c = leaf(24), *d = indirect_outer(24);
    ident_expect(a, 0);
    ident_expect(b, -1);
    ident_expect(c, -1);
    ident_expect(d, indirect_group);
    std::free(a); std::free(b); std::free(c); std::free(d);
  }
}

static void *thread_main(void *)
{
  basic_rounds(200);
  sibling_rounds(100);
  rec(TOP);
  return nullptr;
}

// Whether the call returning to `site` leads somewhere else than middle,
// to code the unwinder has information for.
static int stub_with_unwind_info(std::uintptr_t site)
{
  std::int32_t rel;
  std::memcpy(&rel, reinterpret_cast<const void *>(site - 4), 4);
  std::uintptr_t target = site + static_cast<std::uintptr_t>(static_cast<std::intptr_t>(rel));
  if (target == reinterpret_cast<std::uintptr_t>(&middle)) return 0;
  struct eh_bases bases;
  return _Unwind_Find_FDE(reinterpret_cast<void *>(target + 1), &bases) != nullptr;
}

static std::uintptr_t exe_base(void)
{
  std::uintptr_t base = 0;
  dl_iterate_phdr([](struct dl_phdr_info *info, std::size_t, void *data) {
    *static_cast<std::uintptr_t *>(data) = info->dlpi_addr;
    return 1;                     // the executable comes first
  }, &base);
  return base;
}

int main(int argc, char **argv)
{
  if (argc < 5) return 2;
  stubs_on = std::atoi(argv[3]);
  if (!std::atoi(argv[4])) indirect_group = -1;
  std::printf("stub_fde %d\n", stub_with_unwind_info(exe_base() + std::strtoul(argv[2], nullptr, 16)));

  basic_rounds(200);
  sibling_rounds(200);
  for (int i = 0; i < 20; i++) rec(TOP);

  for (int i = 0; i < 20; i++) {
    if (setjmp(jump_back) == 0) jump_outer();
    void *p = other(24);
    ident_expect(p, -1);          // the site was left by longjmp
    std::free(p);
  }

  std::signal(SIGUSR1, handler);
  for (int i = 0; i < 20; i++) sig_outer();
  if (handled != 20) return 3;
  if (alt_stack_rounds() != 0 || handled != 40) return 3;

  for (int i = 0; i < 20; i++) {
    try {
      throw_outer();
    } catch (const std::runtime_error &) {
      void *p = other(24);
      ident_expect(p, -1);        // unwound past the site
      std::free(p);
    }
  }

  // A shared library linked at start, and one opened later.
  for (int i = 0; i < 50; i++) {
    void *p = lib_a_outer(24), *q = lib_a_middle(24);
    ident_expect(p, 4);
    ident_expect(q, -1);
    std::free(p); std::free(q);
  }
  void *lib_b = dlopen(argv[1], RTLD_NOW);
  if (!lib_b) return 4;
  auto b_outer = reinterpret_cast<void *(*)(std::size_t)>(dlsym(lib_b, "lib_b_outer"));
  auto b_middle = reinterpret_cast<void *(*)(std::size_t)>(dlsym(lib_b, "lib_b_middle"));
  for (int i = 0; i < 50; i++) {
    void *p = b_outer(24), *q = b_middle(24);
    ident_expect(p, 7);
    ident_expect(q, -1);
    std::free(p); std::free(q);
  }

  pthread_t threads[4];
  for (auto &t : threads) pthread_create(&t, nullptr, thread_main, nullptr);
  for (auto &t : threads) pthread_join(t, nullptr);

  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    basic_rounds(50);
    rec(TOP);
    std::_Exit(ident_report() == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  return ident_report();
}
