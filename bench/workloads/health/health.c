/* A hospital simulation in the style of Olden's health: a 4-ary tree of
 * villages, each with a hospital holding patient lists (waiting, assessment,
 * inside). Each step every village may generate a patient; patients move
 * from list to list and some are referred up to the parent village. The
 * list nodes and patients are small, long-lived and walked every step,
 * interleaved in memory with everything else the simulation allocates.
 *
 * usage: health LEVELS STEPS
 * prints the patients treated and a checksum. */
#include "../common/bench_util.h"

struct patient {
   uint64_t id;
   long hosps_visited;
   long time;
   long time_left;
};

struct list_node {
   struct list_node *next;
   struct patient *patient;
};

struct plist {
   struct list_node *head;
   long length;
};

struct village {
   struct village *child[4];
   struct village *parent;
   struct plist waiting, assess, inside, returned;
   long personnel;
   long free_personnel;
   long level;
   uint64_t seed;
};

__attribute__((noinline)) static void *xmalloc(size_t size)
{
   void *p = malloc(size);
   return p ? p : bench_die_oom();
}

static void list_push(struct plist *l, struct patient *p)
{
   struct list_node *n = xmalloc(sizeof *n);
   n->patient = p;
   n->next = NULL;
   /* Appended at the tail, as Olden does, so each push walks the list. */
   struct list_node **at = &l->head;
   while (*at)
      at = &(*at)->next;
   *at = n;
   l->length++;
}

static void list_remove(struct plist *l, struct patient *p)
{
   for (struct list_node **at = &l->head; *at; at = &(*at)->next) {
      if ((*at)->patient == p) {
         struct list_node *dead = *at;
         *at = dead->next;
         free(dead);
         l->length--;
         return;
      }
   }
}

static struct village *make_village(struct village *parent, long level, uint64_t seed)
{
   struct village *v = xmalloc(sizeof *v);
   *v = (struct village){0};
   v->parent = parent;
   v->level = level;
   v->seed = seed;
   /* Leaves are slightly understaffed, so their waiting lists grow slowly. */
   v->personnel = 3L << (level > 0 ? level - 1 : 0);
   v->free_personnel = v->personnel;
   if (level > 1)
      for (int i = 0; i < 4; i++)
         v->child[i] = make_village(v, level - 1, seed * 4 + (uint64_t)i + 1);
   return v;
}

static uint64_t next_id;

static struct patient *generate_patient(struct village *v)
{
   if (bench_below(&v->seed, 4) != 0)
      return NULL;
   struct patient *p = xmalloc(sizeof *p);
   p->id = ++next_id;
   p->hosps_visited = 0;
   p->time = 0;
   p->time_left = 0;
   return p;
}

/* Treated patients leave; referred ones are handed to the parent village. */
static void check_inside(struct village *v, struct plist *up, uint64_t *sum)
{
   struct list_node *n = v->inside.head;
   while (n) {
      struct patient *p = n->patient;
      n = n->next;
      if (--p->time_left == 0) {
         v->free_personnel++;
         list_remove(&v->inside, p);
         *sum = bench_mix(*sum, p->id * 31 + (uint64_t)p->time + (uint64_t)p->hosps_visited);
         free(p);
      }
   }
   n = v->assess.head;
   while (n) {
      struct patient *p = n->patient;
      n = n->next;
      p->time++;
      if (--p->time_left == 0) {
         list_remove(&v->assess, p);
         if (v->parent && bench_below(&v->seed, 10) < 1) {
            v->free_personnel++;
            list_push(up, p);
         } else {
            p->time_left = 10;
            p->time += 10;
            list_push(&v->inside, p);
         }
      }
   }
   for (n = v->waiting.head; n; n = n->next)
      n->patient->time++;
}

static void check_waiting(struct village *v)
{
   while (v->waiting.head && v->free_personnel > 0) {
      struct patient *p = v->waiting.head->patient;
      v->free_personnel--;
      list_remove(&v->waiting, p);
      p->time_left = 3;
      p->time += 3;
      list_push(&v->assess, p);
   }
}

/* One time step over the subtree; returns the patients referred upwards. */
static void sim(struct village *v, struct plist *up, uint64_t *sum)
{
   struct plist from_children = {0};
   for (int i = 0; i < 4; i++)
      if (v->child[i])
         sim(v->child[i], &from_children, sum);
   while (from_children.head) {
      struct patient *p = from_children.head->patient;
      list_remove(&from_children, p);
      p->hosps_visited++;
      list_push(&v->waiting, p);
   }
   check_inside(v, up, sum);
   check_waiting(v);
   struct patient *p = generate_patient(v);
   if (p) {
      p->hosps_visited++;
      list_push(&v->waiting, p);
   }
}

static long count_and_free(struct village *v, uint64_t *sum)
{
   long remaining = 0;
   struct plist *lists[] = {&v->waiting, &v->assess, &v->inside};
   for (int i = 0; i < 4; i++)
      if (v->child[i])
         remaining += count_and_free(v->child[i], sum);
   for (int k = 0; k < 3; k++) {
      while (lists[k]->head) {
         struct patient *p = lists[k]->head->patient;
         *sum = bench_mix(*sum, p->id + (uint64_t)p->time);
         list_remove(lists[k], p);
         free(p);
         remaining++;
      }
   }
   free(v);
   return remaining;
}

int main(int argc, char **argv)
{
   long levels = bench_arg(argc, argv, 1, 5);
   long steps = bench_arg(argc, argv, 2, 500);
   uint64_t sum = 0;
   struct village *top = make_village(NULL, levels, 7);
   struct plist nowhere = {0};

   for (long t = 0; t < steps; t++)
      sim(top, &nowhere, &sum);
   long remaining = count_and_free(top, &sum);
   printf("patients %llu still in care %ld\n", (unsigned long long)next_id, remaining);
   bench_print_checksum(sum);
   return 0;
}
