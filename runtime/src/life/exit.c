/* Statistics at exit. exit() runs the destructor; dash and other programs
 * that leave by _exit() or _Exit() run none, so those two are interposed
 * too. A program may close its stderr before it exits (coreutils do, in an
 * atexit handler), so the table, and the warning that a statistics file
 * cannot be written, go to a copy of fd 2 made at start-up. */
#define _GNU_SOURCE
#include "exit.h"
#include "attributes.h"
#include "init.h"
#include "internal.h"
#include "stats.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int stats_fd = 2;
static pid_t stats_pid;              /* the process the statistics are of */
static atomic_int written;

void _corral_exit_init(void)
{
  if (!_corral_options.stats) return;
  stats_pid = getpid();
  /* Close-on-exec: a program exec'd from here has its own copy made. */
  int fd = fcntl(2, F_DUPFD_CLOEXEC, 64);
  if (fd >= 0) stats_fd = fd;
}

void _corral_exit_after_fork(void)
{
  stats_pid = getpid();
  atomic_store(&written, 0);
}

static void write_once(void)
{
  if (atomic_load(&_corral_state) != CORRAL_STATE_READY || !_corral_options.stats) return;
  /* A vfork child (posix_spawn's, a shell's) shares the parent's memory
   * and runs no fork handler: its pid tells it apart. */
  if (getpid() != stats_pid) return;
  if (atomic_exchange(&written, 1)) return;
  _corral_hold(stats_fd);
  _corral_stats_write(_corral_options.stats, stats_fd);
  _corral_release();
}

__attribute__((destructor)) static void corral_destructor(void)
{
  write_once();
}

__attribute__((noreturn)) static void leave(int status)
{
  write_once();
  for (;;) syscall(SYS_exit_group, status);
}

CORRAL_EXPORT void _exit(int status) { leave(status); }
CORRAL_EXPORT void _Exit(int status) { leave(status); }
