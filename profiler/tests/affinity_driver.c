/* Native harness for src/affinity.c: replays a synthetic trace from stdin and
 * prints the resulting edges, so the queue's rules are tested without
 * Valgrind. Trace lines (one command each, '#' starts a comment):
 *   distance A            affinity distance in bytes (before any other line)
 *   alloc OBJ CTX         object OBJ (< 65536) is allocated from context CTX
 *   free OBJ
 *   access OBJ SIZE [T]   SIZE-byte access to OBJ by thread T (default 0)
 * Output: "edge A B W" per edge (A <= B), then "traversals N deduplicated M". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "affinity.h"

#define MAX_OBJ 65536
#define MAX_CTX 1024
#define MAX_THREADS 16

static af_obj objects[MAX_OBJ];
static af_ctx_tail tails[MAX_CTX];
static af_queue queues[MAX_THREADS];

static void* zeroed(unsigned long n) { return calloc(1, n); }

static void print_edge(af_u32 a, af_u32 b, af_u64 w, void* arg)
{
   printf("edge %u %u %llu\n", a, b, w);
}

static void fail(int line, const char* why)
{
   fprintf(stderr, "affinity_driver: line %d: %s\n", line, why);
   exit(2);
}

int main(void)
{
   af_state st;
   unsigned distance = 128;
   int started = 0, lineno = 0;
   char line[256], cmd[32];
   while (fgets(line, sizeof line, stdin)) {
      unsigned a = 0, b = 0, t = 0;
      lineno++;
      if (line[0] == '#' || sscanf(line, "%31s", cmd) != 1) continue;
      if (!strcmp(cmd, "distance")) {
         if (started || sscanf(line, "%*s %u", &distance) != 1) fail(lineno, "bad distance");
         continue;
      }
      if (!started) {
         af_init(&st, distance, zeroed, free);
         for (int i = 0; i < MAX_THREADS; i++) af_queue_init(&st, &queues[i]);
         started = 1;
      }
      int n = sscanf(line, "%*s %u %u %u", &a, &b, &t);
      if (n < 1 || a >= MAX_OBJ) fail(lineno, "bad object");
      if (!strcmp(cmd, "alloc")) {
         if (n < 2 || b >= MAX_CTX) fail(lineno, "bad context");
         af_on_alloc(&st, &tails[b], &objects[a], b);
      } else if (!strcmp(cmd, "free")) {
         af_on_free(&objects[a]);
      } else if (!strcmp(cmd, "access")) {
         if (n < 2 || t >= MAX_THREADS) fail(lineno, "bad access");
         if (objects[a].seq == 0) fail(lineno, "access to a dead object");
         af_access(&st, &queues[t], &objects[a], b);
      } else {
         fail(lineno, "unknown command");
      }
   }
   if (!started) af_init(&st, distance, zeroed, free);
   af_for_each_edge(&st, print_edge, NULL);
   printf("traversals %llu deduplicated %llu\n", st.traversals, st.deduplicated);
   return 0;
}
