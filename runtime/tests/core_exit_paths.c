/* Ways a process ends, for the statistics at exit: argv[1] is
 *   exit        exit(0)
 *   close       an atexit handler closes stderr first (as coreutils do)
 *   _exit       _exit(0), no destructors (as dash does)
 *   _Exit       _Exit(0)
 *   vfork       a vfork child _exits before its parent exits normally
 * Each allocates 100 objects first. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_stderr(void) { close(2); }

int main(int argc, char **argv)
{
  const char *how = argc > 1 ? argv[1] : "exit";
  static void *volatile kept[100];      /* volatile: gcc drops a malloc freed unused */
  for (int i = 0; i < 100; i++) kept[i] = malloc(24);
  for (int i = 0; i < 100; i++) free(kept[i]);
  if (!strcmp(how, "close")) atexit(close_stderr);
  if (!strcmp(how, "_exit")) _exit(0);
  if (!strcmp(how, "_Exit")) _Exit(0);
  if (!strcmp(how, "vfork")) {
    pid_t pid = vfork();
    if (pid == 0) _exit(7);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) return 1;
  }
  exit(0);
}
