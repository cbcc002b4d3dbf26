/* The store of replay blocks (replay_store.h). */
#include "replay_store.h"

#include <pthread.h>

#include "internal.h"
#include "lock.h"

__thread void *_corral_thread_replays __attribute__((tls_model("initial-exec")));

typedef struct spare_s { struct spare_s *next; } spare_t;

static corral_lock_t lock = CORRAL_LOCK_INIT;
static spare_t *spares;                 /* blocks of exited threads (lock) */
static pthread_key_t key;
static int key_ok;

/* The key's destructor, at the thread's exit. A later destructor that
 * allocates and walks takes a block again (and the key brings it here
 * once more). */
static void hand_back(void *block)
{
  _corral_thread_replays = NULL;
  _corral_lock(&lock);
  ((spare_t *)block)->next = spares;
  spares = block;
  _corral_unlock(&lock);
}

/* A thread of the parent may have been inside the store: the child starts
 * it empty (the blocks it held stay mapped, unused). */
static void child_after_fork(void)
{
  _corral_unlock(&lock);
  spares = NULL;
}

void _corral_replay_store_init(void)
{
  key_ok = pthread_key_create(&key, hand_back) == 0;
  pthread_atfork(NULL, NULL, child_after_fork);
}

void *_corral_replay_block(size_t bytes, void (*forget)(void *))
{
  if (!key_ok || !_corral_trylock(&lock)) return NULL;
  spare_t *b = spares;
  if (b) spares = b->next;
  _corral_unlock(&lock);
  if (b) forget(b);                     /* another thread's replays read that thread's stack */
  else if (!(b = _corral_os_map(bytes))) return NULL;
  /* Made this thread's before the key is set: a key past glibc's first 32
   * makes pthread_setspecific allocate, and that allocation's walk must
   * find the block, not ask for another. */
  _corral_thread_replays = b;
  pthread_setspecific(key, b);
  return b;
}
