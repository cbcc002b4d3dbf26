/* The main program's path is read from /proc/self/exe only when a name
 * needs it (test_dynamic.py): this program's own readlink, exported
 * (-rdynamic), takes the runtime's calls and counts those of
 * /proc/self/exe. It makes a pool (a list of 1,000 nodes from one site),
 * frees it, and prints the count at exit, after the statistics if asked:
 *   exe reads=N */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int exe_reads;

ssize_t readlink(const char *path, char *buf, size_t len)
{
  if (strcmp(path, "/proc/self/exe") == 0) exe_reads++;
  return syscall(SYS_readlink, path, buf, len);
}

struct node { struct node *next; long v; };

static void report(void)
{
  fprintf(stderr, "exe reads=%d\n", exe_reads);
}

int main(void)
{
  struct node *head = NULL;
  for (long i = 0; i < 1000; i++) {
    struct node *p = malloc(sizeof *p);
    p->next = head;
    p->v = i;
    head = p;
  }
  long sum = 0;
  while (head) {
    struct node *next = head->next;
    sum += head->v;
    free(head);
    head = next;
  }
  printf("%ld\n", sum);
  /* registered last, run first: corral's statistics print from a
   * destructor, after this; the count is what the start and the run read */
  atexit(report);
  return 0;
}
