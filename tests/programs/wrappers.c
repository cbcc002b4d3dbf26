/* Allocation wrappers of one, two and three layers, and functions that are
 * not wrappers because they touch or link the object they allocate. Built
 * as a shared library too (-fPIC), where a call to an exported wrapper
 * goes through the library's own PLT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

struct node { struct node *next; int v; };
static struct node *head;
void *(*volatile indirect_alloc)(size_t) = malloc;  /* volatile: keep the call indirect */
void *last_kept;

/* wrappers */
NOINLINE void *xmalloc(size_t n) { void *p = malloc(n); if (!p) { fputs("oom\n", stderr); abort(); } return p; }
NOINLINE void *layer2(size_t n) { return xmalloc(n); }
NOINLINE void *layer3(size_t n) { void *p = layer2(n); return p; }
NOINLINE void *xcalloc_by_hand(size_t n) { void *p = malloc(n); if (p) memset(p, 0, n); return p; }
NOINLINE void alloc_out(void **out, size_t n) { *out = malloc(n); }
NOINLINE void *tail_alloc(size_t n) { return malloc(n); }
NOINLINE void *new_via_pointer_alloc(size_t n) { return indirect_alloc(n); }
NOINLINE void *zeroed(size_t n) { return memset(xmalloc(n), 0, n); }   /* memset hands p back */

/* not wrappers */
NOINLINE struct node *init_node(int v) { struct node *p = malloc(sizeof *p); p->v = v; p->next = 0; return p; }
NOINLINE void push(int v) { struct node *p = layer3(sizeof *p); p->v = v; p->next = head; head = p; }
NOINLINE char *copy_string(const char *s) { size_t n = strlen(s) + 1; char *p = malloc(n); memcpy(p, s, n); return p; }
NOINLINE void *keep_last(size_t n) { last_kept = malloc(n); return last_kept; }
NOINLINE void *plain_function(size_t n) { return (void *)(n * 3); }
NOINLINE long *filled(size_t n) {   /* writes through a pointer stepped along the object */
    long *p = xmalloc(n * sizeof *p);
    for (long *q = p; q < p + n; q++) *q = (long)n;
    return p;
}

int main(void) {
    void *q;
    push(1);
    alloc_out(&q, 8);
    printf("%d %p %p %p %p %p %s %p %p\n", head->v, xcalloc_by_hand(8), init_node(3), q, tail_alloc(3),
           layer3(5), copy_string("x"), keep_last(4), new_via_pointer_alloc(4));
    return plain_function(0) != 0 || !zeroed(4) || filled(3)[2] != 3;
}
