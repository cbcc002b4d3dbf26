/* Runtime bug reproducer (reported by tests/test_real_programs.py's author):
 * CORRAL_STATS under-reports a group's peak live bytes, so its fragmentation
 * (peak resident - peak live) is overstated.
 *
 * 3000 objects of 64 bytes are all live at once (192000 bytes) before they
 * are freed, yet the statistics say peak live 4096 and frag 99.6%: live bytes
 * are sampled only when a group's chunk count reaches a new peak (here: the
 * first chunk, before its first object is counted) and every 4096
 * allocations (never reached here), not when live bytes peak.
 *
 *   gcc -O1 -o /tmp/peak_live runtime_bug_peak_live.c
 *   CORRAL_RANDOM_POOLS=1 CORRAL_STATS=stderr \
 *     LD_PRELOAD=build/runtime/libcorral.so /tmp/peak_live
 *
 * Expected: group random-0 with peak live >= 192000. Seen (libcorral.so of
 * commit 260cca4): peak live 4096 (only stdout's buffer, live at the first
 * sample), frag 99.6%. A plan group in a dlopen'ed library showed peak live
 * 0 with 211 KB live.
 */
#include <stdio.h>
#include <stdlib.h>

#define N 3000

int main(void)
{
  static char *objects[N];
  long sum = 0;
  for (int i = 0; i < N; i++) {
    objects[i] = malloc(64);
    objects[i][0] = (char)i;
  }
  for (int i = 0; i < N; i++) {
    sum += objects[i][0];
    free(objects[i]);
  }
  printf("%d objects of 64 bytes were live together (checksum %ld)\n", N, sum);
  return 0;
}
