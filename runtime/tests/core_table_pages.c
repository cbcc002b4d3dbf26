/* corral's own tables are advised MADV_NOHUGEPAGE (base/os.c): prints the
 * MiB of writable mappings that carry the `nh` flag in /proc/self/smaps
 * (mappings made one after another with the same advice merge into one),
 * after a few allocations have brought the runtime up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
  void *volatile keep[64];
  for (int i = 0; i < 64; i++) keep[i] = malloc(16 + i);
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 2;
  char line[512], perms[8] = "";
  unsigned long lo = 0, hi = 0;
  unsigned long advised = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char p[8];
    if (sscanf(line, "%lx-%lx %7s", &a, &b, p) == 3) {
      lo = a, hi = b;
      strcpy(perms, p);
    } else if (!strncmp(line, "VmFlags:", 8) && perms[1] == 'w' && strstr(line, " nh")) {
      advised += hi - lo;
    }
  }
  fclose(f);
  for (int i = 0; i < 64; i++) free(keep[i]);
  printf("advised %lu\n", advised >> 20);
  return 0;
}
