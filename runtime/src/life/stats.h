/* Statistics at exit (stats.c); format in docs/formats.md, "Runtime statistics". */
#ifndef CORRAL_STATS_H
#define CORRAL_STATS_H

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* dest: "1"/"stderr" for a table on `err_fd` (stderr or a copy of it),
 * else a JSON file path where %p stands for the pid. */
void _corral_stats_write(const char *dest, int err_fd);

#pragma GCC visibility pop

#endif
