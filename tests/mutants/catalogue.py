"""The breakages `make mutants` applies, one at a time, to a copy of the
sources. Each is a small, plausible bug in a path the suite claims to
cover; the suite must fail on every one. `before` must occur exactly once
in `path` (so a mutant never silently stops applying after an edit)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    before: str
    after: str
    why: str        # what the suite must notice


MUTANTS = [
    Mutant("stub-renote-dropped", "runtime/src/identify_match.c",
           "    if (t->stub_installed && on == 0) renote(t, f.pc, f.sp - 8, &renotes);\n",
           "",
           "after recursion through a stubbed site the outer call is forgotten"),
    Mutant("stub-stale-note-trusted", "runtime/src/stub_decide.h",
           "      if (sp - lo > hi - 8 - lo || *(const uintptr_t *)sp != t->stub_ret[k]) dead |= (uint64_t)1 << k;\n",
           "      if (sp - lo > hi - 8 - lo) dead |= (uint64_t)1 << k;\n",
           "a site whose call returned still counts as live"),
    Mutant("reallocarray-overflow", "runtime/src/interpose.c",
           "CORRAL_EXPORT void *reallocarray(void *p, size_t n, size_t size)\n{\n  size_t total;\n"
           "  if (__builtin_mul_overflow(n, size, &total)) {",
           "CORRAL_EXPORT void *reallocarray(void *p, size_t n, size_t size)\n{\n  size_t total;\n"
           "  if (((void)__builtin_mul_overflow(n, size, &total), 0)) {",
           "reallocarray without its multiplication check"),
    Mutant("stack-upper-bound", "runtime/src/unwind.h",
           "return at >= s->lo && at <= s->hi - bytes && (at & 7) == 0;",
           "return at >= s->lo && (at & 7) == 0;",
           "the walk reads above the thread's stack"),
    Mutant("double-free-key", "runtime/src/alloc.c",
           "  if (CORRAL_UNLIKELY(((uint64_t *)p)[1] == c->key)) return double_free(c, p);\n",
           "",
           "a double free is no longer detected"),
    Mutant("remote-free-key", "runtime/src/alloc.c",
           "  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && (!c->block_size || _corral_block_start(c, p)));\n"
           "  ((uint64_t *)p)[1] = c->key;\n",
           "  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && (!c->block_size || _corral_block_start(c, p)));\n",
           "a free by another thread does not mark the object free"),
    Mutant("fresh-object-keeps-free-mark", "runtime/src/heap.h",
           "  c->free = p[0];\n  p[1] = NULL;\n  c->live++;\n",
           "  c->free = p[0];\n  c->live++;\n",
           "a reused block still looks free: its next free warns of a double free"),
    Mutant("block-start-unchecked", "runtime/src/heap.h",
           "return off < __atomic_load_n(&c->limit, __ATOMIC_RELAXED) && off * c->div_magic < c->div_magic;",
           "return off < __atomic_load_n(&c->limit, __ATOMIC_RELAXED);",
           "a free of a pointer inside a block is taken for the block's own"),
    Mutant("malloc-not-a-tail-call", "runtime/src/interpose.c",
           "  return _corral_malloc_rest(size);\n}\n\nCORRAL_EXPORT void free(",
           "  void *p = _corral_malloc_rest(size);\n"
           "  __asm__ __volatile__(\"\" : : \"r\"(p) : \"memory\");\n  return p;\n}\n\nCORRAL_EXPORT void free(",
           "identification sees a frame inside libcorral instead of the program's call site"),
    Mutant("realloc-interior-pointer", "runtime/src/interpose.c",
           "  if (where != CORRAL_OBJECT && where != CORRAL_NOT_GROUP) {\n"
           "    _corral_warn(\"realloc of invalid pointer %p (%s)\", p, _corral_where_text(where));\n"
           "    errno = ENOMEM;\n    return NULL;\n  }\n",
           "",
           "realloc of an interior pointer is passed on instead of refused"),
    Mutant("realloc-copies-half", "runtime/src/interpose.c",
           "  memcpy(q, p, old < size ? old : size);\n",
           "  memcpy(q, p, (old < size ? old : size) / 2);\n",
           "realloc that moves an object loses its contents"),
    Mutant("posix-memalign-errno", "runtime/src/interpose.c",
           "  errno = saved;                        /* posix_memalign leaves errno alone */\n",
           "",
           "posix_memalign changes errno"),
    Mutant("no-alternate-stack", "runtime/src/unwind.c",
           "return alternate_stack(sp, stack);",
           "return -1;",
           "a handler on sigaltstack is never walked"),
    Mutant("no-fork-handlers", "runtime/src/init.c",
           "  pthread_atfork(fork_prepare, fork_parent, fork_child);\n",
           "",
           "a child forked while another thread holds corral's locks"),
    Mutant("first-match-always", "corral/plan/planner.py",
           "first_match = bool(selectors) and first_match_holds(contexts, selectors, direct, depth)",
           "first_match = bool(selectors)",
           "the plan claims the nearest clause decides where it does not"),
    Mutant("groups-unordered", "corral/plan/planner.py",
           "    kept.sort(key=lambda g: -g.weight)      # the heaviest group is tried first at run time\n",
           "",
           "groups are not ordered heaviest first"),
    Mutant("frame0-without-direct", "runtime/src/identify.c",
           "  return t->direct[_corral_direct_find(t, t->stub_ret[k])].key != 0;\n",
           "  return 1;\n",
           "a site that calls malloc loses its stub though no direct entry decides it"),
    Mutant("free-owner-unchecked", "runtime/src/heap.h",
           "    if (CORRAL_LIKELY(atomic_load_explicit(&c->owner, memory_order_relaxed) == _corral_tls_fast)) {\n"
           "      _corral_block_free_local(c, p);",
           "    if (1) {\n      _corral_block_free_local(c, p);",
           "free's first way pushes onto another thread's list without a lock"),
    Mutant("size-class-boundary", "runtime/src/size_class.h",
           "(unsigned)(((k - 1) >> (top - 1)) & 1);",
           "(unsigned)((k >> (top - 1)) & 1);",
           "the runtime's two-per-doubling classes split one granule off from the planner's"),
    Mutant("pool-calls-outlive-plan", "runtime/src/identify.c",
           "  __atomic_store_n(&_corral_gates.pool_below, t ? below : 0, __ATOMIC_RELAXED);\n",
           "  __atomic_store_n(&_corral_gates.pool_below, below, __ATOMIC_RELAXED);\n",
           "pool calls keep grouping after the plan went stale"),
    Mutant("calloc-pool-unzeroed", "runtime/src/pool_call.c",
           "    if (CORRAL_LIKELY(p != NULL)) return memset(p, 0, total);\n",
           "    if (CORRAL_LIKELY(p != NULL)) return p;\n",
           "calloc through a pool call hands out a reused block unzeroed"),
    Mutant("gate-ignores-unpooled-site", "runtime/src/identify.c",
           "    if (req[i].result != CORRAL_STUB_OK) t->probe_gates |= (uint8_t)gates_of(req[i].callee);\n",
           "",
           "an entry point forwards requests of a grouped site that has no pool call"),
    Mutant("stub-undecided-redecided", "runtime/src/interpose.c",
           "  if (g == UNDECIDED) g = _corral_identify_after_stubs(ret0, fp0);\n",
           "  if (g == UNDECIDED) g = _corral_identify(ret0, fp0, size);\n",
           "after the notes could not decide, malloc trusts them again instead of walking"),
    Mutant("one-site-judged-off-stack", "runtime/src/interpose.c",
           "    if (CORRAL_UNLIKELY(rsp >= s->hi)) return 0;     /* hi is 0 until the bounds are known */\n",
           "",
           "a handler on a signal stack above the thread's drops the interrupted site's note"),
    Mutant("dyn-fast-way-forwards", "runtime/src/dynamic.c",
           "          c->counted_allocs++;\n          return _corral_block_pop(c);\n",
           "          return _corral_next.malloc(size);\n",
           "malloc's dynamic way sends a pooled context's objects to the allocator underneath"),
    Mutant("dyn-sample-never-taken", "runtime/src/dynamic.c",
           "  if (_corral_dyn_sample_pending) _corral_dyn_sample(p);\n}",
           "}",
           "dynamic mode's samples are scheduled but never read, so no pool merges"),
    Mutant("random-way-forwards", "runtime/src/interpose.c",
           "  if (CORRAL_LIKELY(p != NULL)) return p;\n  if ((p = _corral_group_alloc_slow(g, size, 0))) return p;\n",
           "  if (CORRAL_LIKELY(p != NULL)) return _corral_next.malloc(size);\n"
           "  if ((p = _corral_group_alloc_slow(g, size, 0))) return p;\n",
           "malloc's random-pools way hands popped requests to the allocator underneath"),
    Mutant("remote-free-uncounted", "runtime/src/heap.h",
           "    if (!_corral_track) {\n      _corral_free_remote(c, p);\n",
           "    {\n      _corral_free_remote(c, p);\n",
           "free's first way pushes another thread's block while statistics count frees, so they go uncounted"),
]
