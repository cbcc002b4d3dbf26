/* Built without frame pointers (test_identify_frames.py): calls back into
 * the program with rbp holding garbage, as -O2 code that uses rbp as a
 * general register does. The walk must unwind it by its CFI rule. -16 is
 * aligned and above every stack pointer: only the walk's upper stack bound
 * keeps it from being read. */
__attribute__((noipa)) void lib_call_with_garbage_rbp(void (*callback)(int), int n)
{
  for (int i = 0; i < n; i++) {
    __asm__ __volatile__("movq $-16, %%rbp" ::: "rbp");
    callback(i);
  }
}
