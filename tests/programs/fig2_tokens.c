/* HALO's Figure 2 pattern, for the planner's end-to-end test: a token stream
 * makes objects of kinds A, B and C, each through its own create_* function
 * and one shared allocation wrapper. A and B objects are linked into one list
 * and traversed repeatedly; C objects are only touched once when made.
 *
 * usage: fig2_tokens TOKENS ROUNDS
 * prints how many objects of each kind it made and a checksum of the
 * traversal, so a run under corral can be compared with a plain run. */
#include <stdio.h>
#include <stdlib.h>

struct object {
   struct object *sibling;
   long kind;
   long value;
   char payload[40];
};

/* Every object goes through this wrapper, so frame 0 of all three kinds is
 * the same call site: only the callers tell them apart. */
__attribute__((noinline)) static struct object *xmalloc(size_t size)
{
   struct object *o = malloc(size);
   if (o == NULL) {
      fputs("out of memory\n", stderr);
      exit(1);
   }
   return o;
}

__attribute__((noinline)) static struct object *create_a(long v)
{
   struct object *o = xmalloc(sizeof *o);
   o->kind = 'A';
   o->value = v;
   return o;
}

__attribute__((noinline)) static struct object *create_b(long v)
{
   struct object *o = xmalloc(sizeof *o);
   o->kind = 'B';
   o->value = 3 * v;
   return o;
}

__attribute__((noinline)) static struct object *create_c(long v)
{
   struct object *o = xmalloc(sizeof *o);
   o->kind = 'C';
   o->value = v ^ 0x55;
   return o;
}

__attribute__((noinline)) static long do_something(struct object *o)
{
   o->payload[0] = (char)o->value;
   return o->value & 7;
}

/* A deterministic token stream (a small linear congruential generator), so
 * two runs with the same arguments make the same objects in the same order. */
static unsigned long token_state = 12345;
static int get_token(void)
{
   token_state = token_state * 6364136223846793005UL + 1442695040888963407UL;
   return (int)((token_state >> 33) % 3);
}

int main(int argc, char **argv)
{
   long tokens = argc > 1 ? atol(argv[1]) : 1000;
   long rounds = argc > 2 ? atol(argv[2]) : 10;
   long made[3] = {0, 0, 0};
   long side = 0;
   struct object *list = NULL;
   struct object **others = malloc(sizeof *others * (size_t)(tokens > 0 ? tokens : 1));
   long n_others = 0;

   for (long i = 0; i < tokens; i++) {
      int token = get_token();
      struct object *o;
      if (token == 0)
         o = create_a(i);
      else if (token == 1)
         o = create_b(i);
      else {
         o = create_c(i);
         side += do_something(o);
         others[n_others++] = o;
         made[2]++;
         continue;
      }
      made[token]++;
      o->sibling = list;
      list = o;
   }

   long sum = 0;
   for (long r = 0; r < rounds; r++)
      for (struct object *o = list; o; o = o->sibling)
         sum += o->value + o->kind;

   printf("A %ld B %ld C %ld sum %ld side %ld\n", made[0], made[1], made[2], sum, side);

   while (list) {
      struct object *next = list->sibling;
      free(list);
      list = next;
   }
   for (long i = 0; i < n_others; i++)
      free(others[i]);
   free(others);
   return 0;
}
