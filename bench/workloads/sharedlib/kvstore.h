/* A string-keyed hash map in a shared library of its own, so that every
 * allocation of the map happens inside libkvstore.so, not the program. */
#ifndef KVSTORE_H
#define KVSTORE_H

#include <stdint.h>

struct kv_store;

struct kv_store *kv_open(unsigned buckets);
void kv_put(struct kv_store *kv, const char *key, uint64_t value);
/* 0 when the key is absent. */
uint64_t kv_get(const struct kv_store *kv, const char *key);
unsigned long kv_count(const struct kv_store *kv);
void kv_close(struct kv_store *kv);

#endif
