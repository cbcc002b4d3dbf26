// Identification test program (test_identify_programs.py): allocation
// wrappers (xmalloc -> my_alloc -> malloc), operator new, a recursive
// builder deeper than the walk, and a shared library of its own. Every
// pointer is checked against the group the hand-written plan gives it:
//   0 list   xmalloc called from build_list          (clause: 2 ranges)
//   1 names  xmalloc called from make_names          (clause: 2 ranges)
//   2 tree   my_alloc called from build_tree         (clause: exact return address)
//   3 objs   operator new in make_objects            (direct: frame 0 range)
//   4 lib    lib_node in libident_lib.so             (clause: library range)
//   -1       xmalloc from misc_user; new in misc_user (direct '-')
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <stdlib.h>
#include <string.h>

extern "C" {
void lib_make_chain(int n, int expected, void (*expect)(const void *, int));

static volatile unsigned allocs;

__attribute__((noipa)) void *my_alloc(size_t n)
{
  void *p = malloc(n);
  allocs++;
  return p;
}

__attribute__((noipa)) void *xmalloc(size_t n)
{
  void *p = my_alloc(n);
  if (!p) abort();
  return p;
}

struct node { struct node *next, *left, *right; long value; };

__attribute__((noipa)) struct node *build_list(int n)
{
  struct node *head = 0;
  for (int i = 0; i < n; i++) {
    struct node *x = (struct node *)xmalloc(sizeof *x);
    ident_expect(x, 0);
    x->next = head;
    head = x;
  }
  return head;
}

__attribute__((noipa)) char **make_names(int n)
{
  char **names = (char **)calloc((size_t)n, sizeof *names);   // calloc here: ungrouped
  ident_expect(names, -1);
  for (int i = 0; i < n; i++) {
    names[i] = (char *)xmalloc(24);
    ident_expect(names[i], 1);
    strcpy(names[i], "name");
  }
  return names;
}

// Recursion: the walk never reduces it, and the tree's selector sits in
// frame 1, so every depth is grouped alike.
__attribute__((noipa)) struct node *build_tree(int depth)
{
  struct node *x = (struct node *)my_alloc(sizeof *x);
  ident_expect(x, 2);
  x->left = depth > 0 ? build_tree(depth - 1) : 0;
  x->right = depth > 0 ? build_tree(depth - 1) : 0;
  return x;
}

__attribute__((noipa)) void misc_user(void)
{
  void *p = xmalloc(40);
  ident_expect(p, -1);
  free(p);
}
}

struct Obj { long a, b, c; Obj *next; };

__attribute__((noipa)) Obj *make_objects(int n)
{
  Obj *head = nullptr;
  for (int i = 0; i < n; i++) {
    Obj *o = new Obj();
    ident_expect(o, 3);
    o->next = head;
    head = o;
  }
  return head;
}

__attribute__((noipa)) void misc_objects(void)
{
  Obj *o = new Obj();
  ident_expect(o, -1);
  delete o;
}

static void free_tree(struct node *x)
{
  if (!x) return;
  free_tree(x->left);
  free_tree(x->right);
  free(x);
}

int main(void)
{
  for (int round = 0; round < 20; round++) {
    struct node *list = build_list(200);
    char **names = make_names(100);
    struct node *tree = build_tree(9);       // 10 levels, deeper than the walk's depth
    Obj *objs = make_objects(100);
    misc_user();
    misc_objects();
    lib_make_chain(100, 4, ident_expect);
    while (list) { struct node *next = list->next; free(list); list = next; }
    for (int i = 0; i < 100; i++) free(names[i]);
    free(names);
    free_tree(tree);
    while (objs) { Obj *next = objs->next; delete objs; objs = next; }
  }
  return ident_report();
}
