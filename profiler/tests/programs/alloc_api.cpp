// Every allocation entry point once per round, so the profile can be checked
// kind by kind; also realloc growth and a fork without exec.
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <malloc.h>
#include <new>
#include <sys/wait.h>
#include <unistd.h>

struct alignas(64) Wide { char bytes[64]; };

// The kernel fills a heap buffer: counted as a write of the buffer's context.
__attribute__((noinline)) static long kernel_fill()
{
   char* buffer = static_cast<char*>(malloc(64));
   int fd = open("/dev/zero", O_RDONLY);
   long n = read(fd, buffer, 64);
   close(fd);
   free(buffer);
   return n;
}

int main(int argc, char** argv)
{
   if (kernel_fill() != 64) return 3;
   const int rounds = 10;
   for (int r = 0; r < rounds; r++) {
      void* m = malloc(10);
      void* c = calloc(3, 8);
      void* g = realloc(nullptr, 5);
      g = realloc(g, 500);               // moves: a realloc allocation, a free
      void* pm = nullptr;
      if (posix_memalign(&pm, 64, 100) != 0) return 1;
      void* al = aligned_alloc(128, 256);
      int* one = new int(r);
      int* many = new int[7];
      Wide* wide = new Wide;
      Wide* wides = new Wide[2];
      int* quiet = new (std::nothrow) int(3);
      if (malloc_usable_size(m) < 10) return 2;
      free(m); free(c); free(g); free(pm); free(al);
      delete one; delete[] many; delete wide; delete[] wides; delete quiet;
   }
   if (argc > 1) {                        // the child's own profile is dropped
      pid_t child = fork();
      if (child == 0) { free(malloc(1)); _exit(0); }
      waitpid(child, nullptr, 0);
   }
   std::printf("done\n");
   return 0;
}
