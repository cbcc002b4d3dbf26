/* Statistics at the process's end (exit.c): written once, at exit, _exit or
 * _Exit. */
#ifndef CORRAL_EXIT_H
#define CORRAL_EXIT_H

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

void _corral_exit_init(void);
/* In a forked child: the child writes its own statistics at its exit. */
void _corral_exit_after_fork(void);

#pragma GCC visibility pop

#endif
