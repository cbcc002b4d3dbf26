/* The pools' prefetch of the block they hand out next, for writing.
 *
 * A pool's pop reads the block it hands out (its link) and writes it (word
 * 1 cleared), and the program writes it next. A block another thread freed
 * sits in that thread's cache, modified: read first, the line comes over
 * shared and must be asked for again to be written. PREFETCHW asks for it
 * owned at once. mimalloc-bench's xmalloc-test, all pooled at 2 threads
 * (one allocates, one frees): 0.945 of mimalloc alone's throughput with
 * PREFETCHT0, 1.051 with PREFETCHW (11 alternating rounds; docs/runtime.md,
 * "Cross-thread frees").
 *
 * PREFETCHW (0F 0D /1) is not on every x86-64: some Intel processors
 * before Nehalem stop on it, and CPUID says it only from AMD's first
 * 64-bit processors and Intel's Broadwell on. Each site is recorded in the
 * section corral_prefetchw (its offset from the record), and where CPUID
 * does not say it, or CORRAL_PREFETCH_WRITE=0, _corral_prefetch_init
 * rewrites every site, before any pool hands a block out, into
 * PREFETCHT0 (0F 18 /1): one byte, the same length and operand. */
#ifndef CORRAL_PREFETCH_H
#define CORRAL_PREFETCH_H

#pragma GCC visibility push(hidden)

#define CORRAL_PREFETCH_WRITE(p)                                              \
  __asm__ volatile("1: prefetchw (%0)\n\t"                                    \
                   ".pushsection corral_prefetchw, \"a\"\n\t"                 \
                   ".balign 4\n\t"                                            \
                   ".long 1b - .\n\t"                                         \
                   ".popsection" ::"r"(p))

/* At start-up, before any pool hands a block out: keeps the sites'
 * PREFETCHW where the processor has it and the option allows it, else
 * rewrites them, and notes so at CORRAL_VERBOSE=1. -1 where the processor
 * has no PREFETCHW and a site was left as it was: then no pool may hand a
 * block out. */
int _corral_prefetch_init(void);

#pragma GCC visibility pop

#endif
