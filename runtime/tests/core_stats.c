/* Known allocations for the statistics tests: 1000 objects of 32 bytes (400
 * freed) and 10 of 10000 bytes (above max_size: ungrouped), no stdio. */
#include <stdlib.h>

int main(void)
{
  void *small[1000], *large[10];
  for (int i = 0; i < 1000; i++) small[i] = malloc(32);
  for (int i = 0; i < 10; i++) large[i] = malloc(10000);
  for (int i = 0; i < 400; i++) free(small[i]);
  for (int i = 0; i < 10; i++) free(large[i]);
  return small[999] == NULL;
}
