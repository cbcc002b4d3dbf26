/* Each thread's replay cache (identify_match.c), mapped at the thread's
 * first walk instead of kept in static TLS: there its 21 KiB were cleared
 * by the loader for every thread of every program run under corral, with
 * a plan or without one (five to ten page faults at each start of
 * `/bin/true`).
 * A thread's block goes back to a store at its exit, and the next thread
 * that walks takes it, its walks forgotten. */
#ifndef CORRAL_REPLAY_STORE_H
#define CORRAL_REPLAY_STORE_H

#include <stddef.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* This thread's block, NULL until its first walk asks for one (and again
 * once its exit handed it back). */
extern __thread void *_corral_thread_replays __attribute__((tls_model("initial-exec")));

/* Once, when a plan is loaded: the key whose destructor hands a thread's
 * block back at its exit. */
void _corral_replay_store_init(void);

/* A block of `bytes` (the same every call) for this thread, made
 * _corral_thread_replays: fresh and zeroed, or one an exited thread
 * handed back, on which `forget` has run first; NULL when there is no
 * memory, no key, or the store is busy (a signal handler's walk while its
 * thread took a block: the walk is then simply not remembered). */
void *_corral_replay_block(size_t bytes, void (*forget)(void *));

#pragma GCC visibility pop

#endif
