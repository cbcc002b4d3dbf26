/* libkvstore.so: chained hash map. An entry and its key are two separate
 * allocations (made back to back), and a lookup touches both; the program's
 * own allocations land between them. */
#include <stdlib.h>
#include <string.h>

#include "kvstore.h"

struct kv_entry {
   struct kv_entry *next;
   char *key;
   uint64_t hash;
   uint64_t value;
};

struct kv_store {
   struct kv_entry **bucket;
   unsigned buckets;
   unsigned long count;
};

static uint64_t hash_key(const char *key)
{
   uint64_t h = 1469598103934665603ULL;
   while (*key)
      h = (h ^ (unsigned char)*key++) * 1099511628211ULL;
   return h;
}

static void *kv_alloc(size_t size)
{
   void *p = malloc(size);
   if (!p)
      abort();
   return p;
}

struct kv_store *kv_open(unsigned buckets)
{
   struct kv_store *kv = kv_alloc(sizeof *kv);
   kv->bucket = calloc(buckets, sizeof *kv->bucket);
   if (!kv->bucket)
      abort();
   kv->buckets = buckets;
   kv->count = 0;
   return kv;
}

void kv_put(struct kv_store *kv, const char *key, uint64_t value)
{
   uint64_t h = hash_key(key);
   struct kv_entry **head = &kv->bucket[h % kv->buckets];
   for (struct kv_entry *e = *head; e; e = e->next)
      if (e->hash == h && strcmp(e->key, key) == 0) {
         e->value = value;
         return;
      }
   struct kv_entry *e = kv_alloc(sizeof *e);
   size_t len = strlen(key) + 1;
   e->key = memcpy(kv_alloc(len), key, len);
   e->hash = h;
   e->value = value;
   e->next = *head;
   *head = e;
   kv->count++;
}

uint64_t kv_get(const struct kv_store *kv, const char *key)
{
   uint64_t h = hash_key(key);
   for (const struct kv_entry *e = kv->bucket[h % kv->buckets]; e; e = e->next)
      if (e->hash == h && strcmp(e->key, key) == 0)
         return e->value;
   return 0;
}

unsigned long kv_count(const struct kv_store *kv)
{
   return kv->count;
}

void kv_close(struct kv_store *kv)
{
   for (unsigned i = 0; i < kv->buckets; i++)
      while (kv->bucket[i]) {
         struct kv_entry *e = kv->bucket[i];
         kv->bucket[i] = e->next;
         free(e->key);
         free(e);
      }
   free(kv->bucket);
   free(kv);
}
