/* Native checks of the plan parser (runtime/src/plan/plan.c): every record, and
 * every reason a plan is refused. Built with the sanitizers by
 * test_plan_unit.py; prints one line per failed check and a summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

static int failed, passed;

#define CHECK(cond) do { if (cond) passed++; else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static corral_plan_clause_t clauses[PLAN_MAX_CLAUSES + 1];
static corral_plan_direct_t directs[16];
static corral_plan_t plan;
static char err[256];

/* Parses a copy of `text`; returns the parser's result, reason in err. */
static int parse(const char *text)
{
  static char buf[1 << 20];
  size_t len = strlen(text);
  memcpy(buf, text, len + 1);
  plan.clauses = clauses;
  plan.clause_capacity = sizeof clauses / sizeof clauses[0];
  plan.directs = directs;
  plan.direct_capacity = sizeof directs / sizeof directs[0];
  err[0] = 0;
  return _corral_plan_parse(buf, len, &plan, err, sizeof err);
}

/* The parse fails and the reason mentions `words`. */
static int refused_for(const char *text, const char *words)
{
  if (parse(text) == 0) return 0;
  if (strstr(err, words)) return 1;
  printf("  reason was: %s\n", err);
  return 0;
}

#define HEAD "corral-plan 1\nmodule 0 - prog\ngroup 0 g\n"

static void good_plan(void)
{
  const char *text =
    "# a comment\n"
    "corral-plan 1\n"
    "option depth 6\n"
    "module 0 9F1C2EA4 /home/u/my prog\n"
    "module 1 - libfoo.so\n"
    "\n"
    "group 3 tree nodes\n"
    "group 0 list\n"
    "clause 0 0+0x11c9\n"
    "clause 0 0+0x1203 1+0x1388\n"
    "clause 3 1+0x7a0..0x7f0\n"
    "direct 0+0x11c9 0\n"
    "direct 0+0x1400 -\n"
    "layout 3 by-size\n"
    "layout 0 mixed\n"
    "end\n"
    "anything after end is ignored\n";
  CHECK(parse(text) == 0);
  CHECK(strcmp(plan.modules[0].path, "/home/u/my prog") == 0);
  CHECK(strcmp(plan.modules[0].basename, "my prog") == 0);
  CHECK(strcmp(plan.modules[0].buildid, "9f1c2ea4") == 0);
  CHECK(plan.modules[1].buildid == NULL);
  CHECK(plan.group_count == 2 && plan.group_limit == 4);
  CHECK(strcmp(plan.groups[3].name, "tree nodes") == 0);
  CHECK(plan.groups[3].rank == 0 && plan.groups[0].rank == 1);
  CHECK(plan.group_by_rank[0] == 3 && plan.group_by_rank[1] == 0);
  CHECK(plan.clause_count == 3);
  CHECK(plan.clauses[1].nsites == 2 && plan.clauses[1].sites[1].module == 1);
  CHECK(plan.clauses[1].sites[1].lo == 0x1388 && plan.clauses[1].sites[1].hi == 0x1389);
  CHECK(plan.clauses[2].sites[0].lo == 0x7a0 && plan.clauses[2].sites[0].hi == 0x7f0);
  CHECK(plan.direct_count == 2 && plan.directs[0].group == 0 && plan.directs[1].group == -1);
  CHECK(plan.groups[3].layout == PLAN_LAYOUT_BY_SIZE && plan.groups[0].layout == PLAN_LAYOUT_MIXED
        && plan.groups[1].layout == 0);
  CHECK(plan.option_count == 1 && strcmp(plan.options[0].name, "depth") == 0
        && strcmp(plan.options[0].value, "6") == 0);

  size_t c, d;
  _corral_plan_count(text, strlen(text), &c, &d);
  CHECK(c == 3 && d == 2);

  /* Records may be indented, with tabs too; the count sees them as well. */
  const char *indented = "corral-plan 1\n module 0 - p\n\tgroup 0 g\n  clause\t0 0+0x10\n\tdirect 0+0x10 0\nend\n";
  _corral_plan_count(indented, strlen(indented), &c, &d);
  CHECK(c == 1 && d == 1);
  CHECK(parse(indented) == 0 && plan.clause_count == 1 && plan.direct_count == 1);

  /* The last line may lack its newline. */
  CHECK(parse("corral-plan 1\nend") == 0);
}

static void bad_plans(void)
{
  CHECK(refused_for("", "empty"));
  CHECK(refused_for("\x7f" "ELF\x02\x01\x01 garbage", "not a corral plan"));
  CHECK(refused_for("corral-plan 2\nend\n", "version 2 not supported"));
  CHECK(refused_for(HEAD "clause 0 0+0x10\n", "truncated"));
  CHECK(refused_for(HEAD "clause 0 0+0x1g\nend\n", "bad site"));
  CHECK(refused_for(HEAD "clause 0 0+10\nend\n", "bad site"));
  CHECK(refused_for(HEAD "clause 0 0+0x20..0x10\nend\n", "bad site"));
  CHECK(refused_for(HEAD "clause 0 0x10\nend\n", "bad site"));
  CHECK(refused_for(HEAD "clause 0 0+0x10..\nend\n", "bad site"));
  CHECK(refused_for(HEAD "clause 0 0+0xffffffffffffffffff\nend\n", "bad site"));
  CHECK(refused_for(HEAD "clause 0\nend\n", "without sites"));
  CHECK(refused_for(HEAD "clause 0 64+0x10\nend\n", "module index out of range"));
  CHECK(refused_for(HEAD "clause 0 5+0x10\nend\n", "undeclared module 5"));
  CHECK(refused_for(HEAD "clause 255 0+0x10\nend\n", "group index out of range"));
  CHECK(refused_for(HEAD "clause 7 0+0x10\nend\n", "undeclared group 7"));
  CHECK(refused_for(HEAD "direct 0+0x10 300\nend\n", "group index out of range"));
  CHECK(refused_for(HEAD "direct 0+0x10 2\nend\n", "undeclared group 2"));
  CHECK(refused_for("corral-plan 1\nmodule 64 - x\nend\n", "module index out of range"));
  CHECK(refused_for("corral-plan 1\nmodule 0 - x\nmodule 0 - y\nend\n", "declared twice"));
  CHECK(refused_for("corral-plan 1\nmodule 0 xyz x\nend\n", "not hex"));
  CHECK(refused_for("corral-plan 1\nmodule 0 -\nend\n", "module needs"));
  CHECK(refused_for(HEAD "frobnicate 1\nend\n", "unknown record"));
  CHECK(parse(HEAD "base mimalloc\nend\n") == 0);    /* for `corral run`; the runtime skips it */
  CHECK(refused_for(HEAD "base\nend\n", "base needs NAME"));
  CHECK(refused_for(HEAD "base glibc jemalloc\nend\n", "base needs NAME"));
  CHECK(parse(HEAD "children\nend\n") == 0);        /* for `corral run` too */
  CHECK(parse(HEAD "mode dynamic\nend\n") == 0);    /* `corral run` starts dynamic mode instead */
  CHECK(refused_for(HEAD "mode\nend\n", "mode needs NAME"));
  CHECK(refused_for(HEAD "children yes\nend\n", "children takes no fields"));
  CHECK(refused_for(HEAD "layout 0 sideways\nend\n", "layout 'sideways' unknown"));
  CHECK(refused_for(HEAD "layout 0\nend\n", "layout needs"));
  CHECK(refused_for(HEAD "layout 0 by-size mixed\nend\n", "layout needs"));
  CHECK(refused_for(HEAD "layout 300 by-size\nend\n", "group index out of range"));
  CHECK(refused_for(HEAD "layout 4 by-size\nend\n", "layout of undeclared group 4"));
  CHECK(refused_for(HEAD "clause 0 0+0x1 0+0x2 0+0x3 0+0x4 0+0x5 0+0x6 0+0x7 0+0x8 0+0x9\nend\n", "too large"));

  /* More clauses than the format allows. */
  static char big[PLAN_MAX_CLAUSES * 24 + 256];
  size_t n = (size_t)snprintf(big, sizeof big, HEAD);
  for (int i = 0; i <= PLAN_MAX_CLAUSES; i++) n += (size_t)snprintf(big + n, sizeof big - n, "clause 0 0+0x%x\n", i + 1);
  snprintf(big + n, sizeof big - n, "end\n");
  CHECK(refused_for(big, "too large"));

  /* An embedded NUL byte: binary, not text. */
  char nul[] = "corral-plan 1\nmod\0ule\nend\n";
  plan.clauses = clauses; plan.clause_capacity = 4; plan.directs = directs; plan.direct_capacity = 4;
  CHECK(_corral_plan_parse(nul, sizeof nul - 1, &plan, err, sizeof err) != 0 && strstr(err, "NUL"));
}

int main(void)
{
  good_plan();
  bad_plans();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
