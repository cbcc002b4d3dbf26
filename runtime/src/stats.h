/* Statistics at exit (stats.c); format in docs/formats.md, "Runtime statistics". */
#ifndef CORRAL_STATS_H
#define CORRAL_STATS_H

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* dest: "1"/"stderr" for a table on stderr, else a JSON file path where %p
 * stands for the pid. */
void _corral_stats_write(const char *dest);

#pragma GCC visibility pop

#endif
