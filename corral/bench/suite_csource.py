"""cppcheck's input in the debian suite (corral/bench/suite.py): `unit-N.c`,
one C file of N functions over a list of records, written as a small
project's code is: loops over arrays and over the list, branches on flags,
records made and freed, strings formatted into buffers, calls of earlier
functions, a few configurations (`#ifdef`) that cppcheck checks one by one,
and now and then a slip it reports (a record leaked on an early return, an
index one past an array, a variable read before it is set), so that its
checkers print findings. cppcheck keeps every token, scope and value it
derives as a C++ object of its own: its heap is those objects.

The file compiles (tests/unit/test_suite_inputs.py); seeded, so one N is
one file on every machine.
"""

import random

from corral.bench import seeded

FEATURES = 3            # FEATURE_0..2: cppcheck checks each combination it sees


def _expr(rng: random.Random, names: list[str]) -> str:
    a, b = rng.choice(names), rng.choice(names)
    return rng.choice((f"{a} + {b}", f"{a} * {rng.randint(2, 9)}", f"({a} ^ {b}) & {rng.randint(7, 255)}",
                       f"{a} - {rng.randint(1, 50)}", f"{a} % {rng.randint(3, 17)}"))


def _block(rng: random.Random, fn: int, slot: int, names: list[str]) -> list[str]:
    """One statement group of function `fn`; `names` are the ints in scope."""
    kind = rng.randrange(7)
    v = f"v{slot}"
    if kind == 0:
        n = rng.randint(4, 24)
        hi = n + 1 if rng.random() < 0.04 else n             # a slip: one past the array
        return [f"  int a{slot}[{n}];",
                f"  for (int j = 0; j < {hi}; j++) a{slot}[j] = j * {rng.randint(2, 9)} + n;",
                f"  int {v} = a{slot}[n % {n}];"]
    if kind == 1:
        return [f"  int {v} = 0;",
                "  for (struct rec *r = head; r != NULL; r = r->next) {",
                f"    if (r->key % {rng.randint(2, 7)} == {rng.randint(0, 1)}) {v} += r->value;",
                f"    else if (r->flags & {1 << rng.randint(0, 4)}) {v} -= {_expr(rng, ['r->key', 'r->value'])};",
                "  }"]
    if kind == 2:
        leak = rng.random() < 0.05                            # a slip: leaked on the early return
        lines = [f"  int {v} = {_expr(rng, names)};",
                 f"  struct rec *made{slot} = malloc(sizeof *made{slot});",
                 f"  if (made{slot} == NULL) return -1;",
                 f"  made{slot}->key = {v}; made{slot}->value = n; made{slot}->flags = {rng.randint(0, 31)};",
                 f"  made{slot}->next = NULL;",
                 f"  snprintf(made{slot}->name, sizeof made{slot}->name, \"r%d-%d\", {fn}, {v});"]
        if leak:
            lines.append(f"  if ({v} > {rng.randint(100, 900)}) return {v};")
        lines += [f"  {v} += (int)strlen(made{slot}->name);", f"  free(made{slot});"]
        return lines
    if kind == 3:
        cases = [f"  case {c}: {v} = {_expr(rng, names)}; break;" for c in range(rng.randint(2, 5))]
        return [f"  int {v};", f"  switch (n % {len(cases) + 1}) {{", *cases,
                f"  default: {v} = {rng.randint(0, 99)};", "  }"]
    if kind == 4 and fn > 0:
        return [f"  int {v} = f{rng.randrange(fn)}(head, n / 2 + {rng.randint(0, 3)});"]
    if kind == 5:
        unset = rng.random() < 0.04                           # a slip: read before it is set
        lines = [f"  int {v};" if unset else f"  int {v} = {rng.randint(0, 9)};",
                 f"  if (n > {rng.randint(1, 40)}) {v} = {_expr(rng, names)};" if unset else
                 f"  while ({v} < n && {v} < {rng.randint(20, 200)}) {v} += {rng.randint(1, 5)};"]
        return lines
    feature = rng.randrange(FEATURES)
    return [f"  int {v} = n;", f"#ifdef FEATURE_{feature}",
            f"  {v} = {_expr(rng, names)};", "#else", f"  {v} = {_expr(rng, names)};", "#endif"]


def unit_c(functions: int) -> str:
    rng = seeded.rng(functions)
    out = ["#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>", "",
           "struct rec { struct rec *next; int key, value, flags; char name[24]; };", ""]
    for fn in range(functions):
        out.append(f"int f{fn}(struct rec *head, int n)")
        out.append("{")
        out.append("  if (n <= 0) return 0;")
        names = ["n"]
        for slot in range(rng.randint(3, 9)):
            out += _block(rng, fn, slot, names)
            names.append(f"v{slot}")
        out.append(f"  return {' + '.join(names[1:])};")
        out += ["}", ""]
    out += ["int main(void)", "{", "  struct rec *head = NULL;", "  int total = 0;",
            f"  for (int i = 0; i < {functions}; i += 7) total += f{functions - 1}(head, i);",
            "  printf(\"%d\\n\", total);", "  return 0;", "}", ""]
    return "\n".join(out)
