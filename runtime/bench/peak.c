/* peak PROGRAM ARGS...: runs the program and writes its peak resident set
 * to stderr ("peak-kib: N"), exiting with its status. A Python parent
 * cannot ask for it: a child it forks starts from a copy of the
 * interpreter, whose resident set the kernel counts in the child's peak
 * when it execs; this small process has next to none. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: peak PROGRAM ARGS...\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    _exit(127);
  }
  int status;
  struct rusage usage;
  if (wait4(pid, &status, 0, &usage) < 0) return 2;
  fprintf(stderr, "peak-kib: %ld\n", usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
