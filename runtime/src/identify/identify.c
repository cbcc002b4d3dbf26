/* Identification: loading the plan and deciding an allocation's group from
 * its return addresses. Design: docs/identification.md. */
#define _GNU_SOURCE
#include "identify.h"
#include "next.h"
#include "replay_store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "dynamic.h"
#include "heap.h"
#include "gates.h"
#include "identify_state.h"
#include "identify_tables.h"
#include "internal.h"
#include "unwind.h"

corral_ident_state_t _corral_ident;
const corral_ident_tables_t *_corral_direct_tables;
static int direct_open;

/* The entry points' gates (gates.h) for direct tables d, once the direct
 * table is open: closed (0) for an entry point none of whose grouped
 * frame-0 sites was left to the probe, when no allocation needs a walk;
 * forward_from 0 when, on top of that, every gate is closed and no stub
 * site exists, so the plain entry points have nothing left to decide. The
 * pool calls serve while a plan is loaded (t); a refused plan sends them the
 * full way. Until the direct table opens (and for good while counting or
 * with random pools) every gate stays open. */
static void set_gates(const corral_ident_tables_t *t, const corral_ident_tables_t *d)
{
  if (!direct_open || _corral_ngroups == 0) return;
  size_t below = _corral_options.max_size + 1;
  unsigned open = d && d->no_walk ? d->probe_gates : CORRAL_PROBE_ALL;
  int64_t on = t ? CORRAL_GATE_PROBE : CORRAL_GATE_FULL;
  /* Dynamic mode decides only where no plan is loaded; malloc, calloc,
   * realloc and operator new take its own way, the other entry points its
   * full way. */
  int64_t on_dynamic = !t && _corral_modes.dynamic ? CORRAL_GATE_DYNAMIC : on;
  __atomic_store_n(&_corral_gates.on_malloc, open & CORRAL_PROBE_MALLOC ? on_dynamic : 0, __ATOMIC_RELAXED);
  __atomic_store_n(&_corral_gates.on_calloc, open & CORRAL_PROBE_CALLOC ? on_dynamic : 0, __ATOMIC_RELAXED);
  __atomic_store_n(&_corral_gates.on_realloc, open & CORRAL_PROBE_REALLOC ? on_dynamic : 0, __ATOMIC_RELAXED);
  __atomic_store_n(&_corral_gates.on_new, open & CORRAL_PROBE_NEW ? on_dynamic : 0, __ATOMIC_RELAXED);
  /* Dynamic mode's given-back sites call the none way (dynamic/give_back.c): it
   * forwards every size. Not once a plan was loaded: a refused plan's pool
   * calls must take the full way. */
  size_t none_below = _corral_modes.dynamic && !_corral_ident.plan ? SIZE_MAX : 0;
  __atomic_store_n(&_corral_gates.pool_below, t ? below : none_below, __ATOMIC_RELAXED);
  /* Dynamic mode never pools a request above its own limit (a pooled
   * block that realloc grows is not foreign, and takes the long way): the
   * first test forwards those. Ptrdist bc's bignum digits (1,040 bytes and
   * up) went through dynamic mode's way, 20 instructions each. */
  size_t forward = below;
  if (!t && _corral_modes.dynamic && _corral_options.dyn_max_size < _corral_options.max_size)
    forward = _corral_options.dyn_max_size + 1;
  _corral_gates_forward_from(!open && d && !d->stub_installed ? 0 : forward, _corral_next.realloc_sets_errno);
}

/* The tables go to identification, and to the entry points' own frame-0
 * probe once that is open and the tables have direct entries. */
static void publish(const corral_ident_tables_t *t)
{
  const corral_ident_tables_t *d = direct_open && t && (t->direct_mask || t->no_walk) ? t : NULL;
  __atomic_store_n(&_corral_ident.tables, t, __ATOMIC_RELEASE);
  __atomic_store_n(&_corral_direct_tables, d, __ATOMIC_RELEASE);
  set_gates(t, d);
}

void _corral_ident_open_direct(void)
{
  direct_open = 1;
  publish(_corral_ident.tables);
}

/* ---------------------------------------------------------------------------
   Loading
--------------------------------------------------------------------------- */

/* Sets the plan's message (reason) and says it once. */
static void refuse(const char *reason)
{
  snprintf(_corral_ident.message, sizeof _corral_ident.message, "%s", reason);
  _corral_warn("plan %s: %s; running ungrouped", _corral_ident.path, reason);
}

/* errno in words, without strerror (which may allocate for a translated
 * or unknown message). */
static const char *errno_words(int e)
{
  switch (e) {
  case EACCES: case EPERM: return "permission denied";
  case EISDIR: return "a directory";
  case ENOTDIR: return "a path component is not a directory";
  case ELOOP: return "too many symbolic links";
  case ENAMETOOLONG: return "name too long";
  case EMFILE: case ENFILE: return "too many open files";
  case EIO: return "I/O error";
  default: return "cannot open";
  }
}

/* The file's text in private writable memory (the parser cuts it in place). */
static char *read_plan_file(const char *path, size_t *len, char *err, size_t errlen)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) snprintf(err, errlen, "missing (no such file)");
    else snprintf(err, errlen, "unreadable (%s, errno %d)", errno_words(e), e);
    return NULL;
  }
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "unreadable (not a regular file)");
  } else if ((size_t)st.st_size > PLAN_MAX_BYTES) {
    snprintf(err, errlen, "too large (%lld bytes, limit %u)", (long long)st.st_size, PLAN_MAX_BYTES);
  } else if (st.st_size == 0) {
    snprintf(err, errlen, "empty");
  } else {
    /* A copy rather than a file mapping: a file truncated under us must not
     * turn into SIGBUS. One extra byte keeps the last line NUL-terminated. */
    *len = (size_t)st.st_size;
    text = _corral_os_map(*len + 1);
    size_t got = 0;
    while (text && got < *len) {
      ssize_t n = read(fd, text + got, *len - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += (size_t)n;
    }
    if (!text) snprintf(err, errlen, "no memory to read it");
    else if (got < *len) {
      snprintf(err, errlen, "unreadable (short read)");
      _corral_os_unmap(text, *len + 1);
      text = NULL;
    }
  }
  close(fd);
  return text;
}

static corral_plan_t *parse_plan(char *text, size_t len, char *err, size_t errlen)
{
  size_t clauses, directs;
  _corral_plan_count(text, len, &clauses, &directs);
  if (clauses > PLAN_MAX_CLAUSES) clauses = PLAN_MAX_CLAUSES + 1;   /* the parser then says "too large" */
  if (directs > PLAN_MAX_DIRECT) directs = PLAN_MAX_DIRECT + 1;
  size_t bytes =
      sizeof(corral_plan_t) + clauses * sizeof(corral_plan_clause_t) + directs * sizeof(corral_plan_direct_t);
  corral_plan_t *plan = _corral_os_map(bytes);
  if (!plan) { snprintf(err, errlen, "no memory to parse it"); return NULL; }
  plan->clauses = (corral_plan_clause_t *)(plan + 1);
  plan->clause_capacity = clauses;
  plan->directs = (corral_plan_direct_t *)(plan->clauses + clauses);
  plan->direct_capacity = directs;
  if (_corral_plan_parse(text, len, plan, err, errlen) != 0) {
    _corral_os_unmap(plan, bytes);
    return NULL;
  }
  return plan;
}

/* Whether site k may be left to the direct table when its call enters
 * corral: the table has an entry for it, which decides before any clause
 * does, and every live clause holding k is k alone (a clause of more sites
 * keeps k's stub, so that stubs still decide it without a walk). */
static int frame0_ok(const corral_ident_tables_t *t, unsigned k)
{
  uint64_t bit = (uint64_t)1 << k;
  for (size_t i = 0; i < t->clause_count; i++)
    if (t->clause_need[i] && (t->clause_stub_mask[i] & bit) && t->clause_stub_mask[i] != bit) return 0;
  return t->direct[_corral_direct_find(t, t->stub_ret[k])].key != 0;
}

/* Redirects the calls of t's stub sites (those of loaded modules). */
static void install_stubs(corral_ident_tables_t *t, const corral_module_table_t *modules)
{
  corral_stub_request_t req[CORRAL_STUB_SITES];
  unsigned n = 0;
  for (unsigned k = 0; k < CORRAL_STUB_SITES; k++) {
    if (!t->stub_ret[k]) continue;
    const corral_module_t *m = _corral_module_of(modules, t->stub_ret[k]);
    if (!m) {
      t->stub_reasons[CORRAL_STUB_NOT_DIRECT]++;
      continue;
    }
    req[n++] = (corral_stub_request_t){k, t->stub_ret[k], m, frame0_ok(t, k), CORRAL_STUB_OK, 0};
  }
  _corral_stubs_install(req, n);
  for (unsigned i = 0; i < n; i++) {
    t->stub_reasons[req[i].result]++;
    if (req[i].result == CORRAL_STUB_OK) {
      t->stub_installed |= (uint64_t)1 << req[i].k;
      t->stub_recursive |= (uint64_t)req[i].recursive << req[i].k;
    } else if (req[i].result == CORRAL_STUB_FRAME0) {
      t->stub_frame0 |= (uint64_t)1 << req[i].k;
    } else _corral_note(1, "site %#lx: no stub (%s); walked", (unsigned long)req[i].ret,
                      _corral_stub_refusal_text(req[i].result));
  }
}

static unsigned gates_of(corral_callee_t callee)
{
  switch (callee) {
  case CORRAL_CALLS_MALLOC: return CORRAL_PROBE_MALLOC;
  case CORRAL_CALLS_CALLOC: return CORRAL_PROBE_CALLOC;
  case CORRAL_CALLS_REALLOC: return CORRAL_PROBE_REALLOC;
  case CORRAL_CALLS_NEW: case CORRAL_CALLS_NEW_NOTHROW: return CORRAL_PROBE_NEW;
  case CORRAL_CALLS_ALIGNED: return 0;          /* those entry points always take the full way */
  default: return CORRAL_PROBE_ALL;
  }
}

/* Points the calls of t's exact direct entries at their pools (or, for
 * ungrouped ones, at the next allocator); the gates of the entry points the
 * others may call stay open. */
static void install_pool_calls(corral_ident_tables_t *t, const corral_module_table_t *modules)
{
  size_t n = 0;
  for (size_t s = 0; s <= t->direct_mask; s++) n += t->direct[s].key != 0;
  if (!n) return;
  corral_pool_call_t *req = _corral_options.stubs ? _corral_os_map(n * sizeof *req) : NULL;
  if (!req) {
    t->probe_gates = CORRAL_PROBE_ALL;
    t->pool_call_reasons[CORRAL_STUB_NOT_DIRECT] = (uint32_t)n;
    return;
  }
  size_t k = 0;
  for (size_t s = 0; s <= t->direct_mask; s++) {
    const corral_direct_entry_t *e = &t->direct[s];
    const corral_module_t *m = e->key ? _corral_module_of(modules, e->key) : NULL;
    if (m) req[k++] = (corral_pool_call_t){.ret = e->key, .m = m,
                                           .pool = e->pool >= 0 ? (unsigned)e->pool : CORRAL_POOL_NONE};
  }
  if (k < n) {                                  /* an entry outside every module: only the probe has it */
    t->probe_gates = CORRAL_PROBE_ALL;
    t->pool_call_reasons[CORRAL_STUB_NOT_DIRECT] += (uint32_t)(n - k);
  }
  _corral_pool_calls_install(req, k);
  for (size_t i = 0; i < k; i++) {
    t->pool_call_reasons[req[i].result]++;
    if (req[i].result != CORRAL_STUB_OK) t->probe_gates |= (uint8_t)gates_of(req[i].callee);
  }
  _corral_os_unmap(req, n * sizeof *req);
}

/* A module of the plan rebuilt while others stay: said once per module
 * (a dlopen rebuilds the tables). */
static void say_stale(const corral_plan_binding_t *b, const char *reason)
{
  uint64_t stale = 0;
  for (unsigned i = 0; i < PLAN_MAX_MODULES; i++) stale |= (uint64_t)b->stale[i] << i;
  if (!(stale & ~_corral_ident.stale_said)) return;
  _corral_ident.stale_said |= stale;
  _corral_warn("plan %s: %s", _corral_ident.path, reason);
}

/* Binds and builds against the current module table; publishes the tables.
 * Returns 0, or -1 having refused the plan. */
static int relocate(const corral_module_table_t *modules)
{
  char err[256];
  corral_plan_binding_t binding;
  int bound = _corral_plan_bind(_corral_ident.plan, modules, &binding, err, sizeof err);
  if (bound < 0) {
    refuse(err);
    return -1;
  }
  if (bound > 0) say_stale(&binding, err);
  corral_ident_tables_t *t = _corral_tables_build(_corral_ident.plan, &binding, modules,
                                           _corral_options.depth, _corral_options.first_match,
                                           err, sizeof err);
  if (!t) {
    refuse(err);
    return -1;
  }
  if (_corral_options.stubs) install_stubs(t, modules);
  _corral_tables_stub_clauses(t);
  install_pool_calls(t, modules);
  publish(t);
  return 0;
}

/* A fork while another thread rebuilds would leave the child's flag set for
 * good: the child has only the forking thread. */
static void child_after_fork(void)
{
  _corral_ident.rebuilding = 0;
}

/* The program `corral run` started has none of the plan's modules loaded:
 * usually a plan made for another program. Its children (a shell, git's
 * helpers) inherit the plan and stay quiet. The plan stays loaded, since a
 * library it names may be dlopened later. */
static void warn_no_module(const corral_plan_t *plan)
{
  if (plan->module_count == 0) return;
  char names[160] = "";
  size_t used = 0;
  unsigned listed = 0;
  for (unsigned i = 0; i < PLAN_MAX_MODULES && listed < 3; i++) {
    if (!plan->modules[i].path) continue;
    if (used < sizeof names) {
      int n = snprintf(names + used, sizeof names - used, "%s%s", listed ? ", " : "", plan->modules[i].basename);
      if (n > 0) used += (size_t)n;
      listed++;
    }
  }
  _corral_warn("plan %s: none of its modules (%s%s) is loaded in this program; nothing is grouped "
               "unless one is loaded later (a plan made for another program?)",
               _corral_ident.path, names, plan->module_count > listed ? ", ..." : "");
}

void _corral_ident_init(void)
{
  _corral_ident_stats_register();
  const char *path = _corral_options.plan;
  if (!path || !*path) return;
  snprintf(_corral_ident.path, sizeof _corral_ident.path, "%s", path);
  char err[256];
  size_t len = 0;
  char *text = read_plan_file(path, &len, err, sizeof err);
  corral_plan_t *plan = text ? parse_plan(text, len, err, sizeof err) : NULL;
  if (!plan) { refuse(err); return; }
  for (unsigned i = 0; i < plan->option_count; i++)
    _corral_option_from_plan(plan->options[i].name, plan->options[i].value);
  _corral_ident.plan = plan;
  _corral_ident.counters = _corral_os_map(IDENT_COUNTER_SLOTS * sizeof(corral_ident_counters_t));
  if (!_corral_ident.counters) { refuse("no memory for its counters"); return; }
  _corral_unwind_init();
  const corral_module_table_t *modules = _corral_modules_scan();
  if (!modules) { refuse("no memory for the module table"); return; }
  /* The main thread's stack bounds now, while core still forwards: glibc
   * finds them by reading /proc/self/maps with stdio, which allocates. */
  corral_unwind_stack_t stack;
  _corral_unwind_stack((uintptr_t)__builtin_frame_address(0), &stack);
  pthread_atfork(NULL, NULL, child_after_fork);
  _corral_replay_store_init();
  if (relocate(modules) == 0) {
    _corral_ident.loaded = 1;
    _corral_ident.group_count = plan->group_limit;
    for (unsigned g = 0; g < plan->group_limit && g < CORRAL_MAX_GROUPS; g++)
      _corral_group_mixed[g] = plan->groups[g].layout ? plan->groups[g].layout == PLAN_LAYOUT_MIXED
                                                       : _corral_options.mixed;
    _corral_note(1, "plan %s: %u groups, %zu clauses, %zu direct entries, %u of its modules loaded",
                 path, plan->group_count, plan->clause_count, plan->direct_count,
                 _corral_ident.tables->modules_matched);
    if (_corral_ident.tables->modules_matched == 0 && _corral_options.plan_pid == (int)getpid()) warn_no_module(plan);
  }
}

void _corral_ident_after_dlopen(void)
{
  if (!_corral_ident.loaded) return;
  /* Two threads may dlopen at once: one rebuild at a time. */
  while (__atomic_exchange_n(&_corral_ident.rebuilding, 1, __ATOMIC_ACQUIRE)) sched_yield();
  const corral_module_table_t *modules = _corral_modules_scan();
  _corral_unwind_forget_rules();
  if (modules && relocate(modules) != 0) {
    /* Stale now: allocations from here on are ungrouped. */
    _corral_ident.loaded = 0;
    publish(NULL);
  }
  __atomic_store_n(&_corral_ident.rebuilding, 0, __ATOMIC_RELEASE);
}

unsigned _corral_group_count(void)
{
  return _corral_ident.group_count;     /* stays put if the plan is refused after a dlopen */
}

const char *_corral_group_name(unsigned g)
{
  const corral_plan_t *plan = _corral_ident.plan;
  if (!plan || g >= plan->group_limit) return NULL;
  return plan->groups[g].name ? plan->groups[g].name : "-";
}
