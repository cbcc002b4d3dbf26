/* A program whose output and exit status must not change whatever plan it is
 * given (test_plan_refusals.py): allocates a little, prints, exits 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
  char *words[100];
  for (int i = 0; i < 100; i++) {
    words[i] = malloc(16 + (size_t)i);
    snprintf(words[i], 16, "w%d", i);
  }
  size_t total = 0;
  for (int i = 0; i < 100; i++) {
    total += strlen(words[i]);
    free(words[i]);
  }
  printf("hello %zu\n", total);
  return 3;
}
