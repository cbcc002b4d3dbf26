/* rss_exec FD [NAME=VALUE...] -- PROGRAM ARGS...: runs PROGRAM as its child
 * with exactly the environment NAME=VALUE... and writes the child's peak RSS
 * (KiB, from wait4) to file descriptor FD.
 *
 * Why not wait4 from the harness directly: Linux carries a process's peak
 * RSS across exec, and the harness (Python with the planner loaded, ~100
 * MiB) would be the process that forks, so a small program's peak would read
 * as the harness's size. Forked from this small helper, the child starts
 * from a few hundred KiB. The exit status is passed on unchanged.
 *
 * The environment comes in argv, not in our own environment, so that the
 * allocator under test (LD_PRELOAD) is loaded into the program only, never
 * into this launcher: a preloaded runtime must see the program start fresh. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
   int dashes = 2;
   while (dashes < argc && strcmp(argv[dashes], "--") != 0)
      dashes++;
   if (argc < 3 || dashes >= argc - 1) {
      fputs("usage: rss_exec FD [NAME=VALUE...] -- PROGRAM [ARGS...]\n", stderr);
      return 125;
   }
   int fd = atoi(argv[1]);
   FILE *report = fdopen(fd, "w");
   if (!report) {
      perror("rss_exec: report descriptor");
      return 125;
   }
   pid_t pid = fork();
   if (pid < 0) {
      perror("rss_exec: fork");
      return 125;
   }
   if (pid == 0) {
      close(fd);
      clearenv();
      for (int i = 2; i < dashes; i++)
         putenv(argv[i]);
      execvp(argv[dashes + 1], argv + dashes + 1);
      perror("rss_exec: exec");
      _exit(127);
   }
   int status;
   struct rusage usage;
   if (wait4(pid, &status, 0, &usage) < 0) {
      perror("rss_exec: wait4");
      return 125;
   }
   fprintf(report, "%ld\n", usage.ru_maxrss);
   fclose(report);
   if (WIFSIGNALED(status)) {
      signal(WTERMSIG(status), SIG_DFL);
      raise(WTERMSIG(status));
      return 128 + WTERMSIG(status);
   }
   return WEXITSTATUS(status);
}
