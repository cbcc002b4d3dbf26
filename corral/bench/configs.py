"""Allocator configurations: a base allocator, and what corral does over it.

mode "base": the allocator alone (LD_PRELOAD of jemalloc or mimalloc, nothing
for glibc); "corral": libcorral.so with the workload's plan over the base;
"random4": libcorral.so without a plan, every small allocation put in one of
four pools at random (CORRAL_RANDOM_POOLS=4, HALO's Figure 15 control: if
random grouping changes the time too, the workload is layout-sensitive at
all); "dynamic": libcorral.so in dynamic mode (no plan); "safe":
libcorral.so in safe mode (docs/safe.md), whose cost is what it measures;
"preload": libcorral.so with no plan and no mode, forwarding every call to
the base: what being preloaded costs by itself, the floor under dynamic
mode (which must see every allocation) on a program where no pool pays;
"order" and "order-by-site": no corral at all, the allocation-order
yardstick (bench/tools/order_bound.c) over the base, every small object
bumped in allocation order at no cost, in one stream or in one per call
site: how far a layout that keeps allocation order can take the program,
and what pooling by site does to it with no allocator code in the way.
"""

import os
from dataclasses import dataclass

from corral import launch, paths
from corral.errors import CorralError

BASES = ("glibc", "jemalloc", "mimalloc")
RANDOM_POOLS = "4"
# The yardstick's modes and the ORDER_BOUND value of each.
ORDER_STREAMS = {"order": "one", "order-by-site": "site"}
ORDER_BOUND = paths.BENCH_DIR / "order_bound.so"


@dataclass(frozen=True)
class Config:
    name: str
    base: str
    mode: str   # "base" | "corral" | "random4" | "dynamic" | "safe" | "preload" | "order" | "order-by-site"

    @property
    def needs_plan(self) -> bool:
        return self.mode == "corral"

    @property
    def needs_runtime(self) -> bool:
        return self.mode not in ("base", *ORDER_STREAMS)

    def environment(self, program, plan=None, stats=None, env=None) -> dict:
        """The child environment for running `program` in this configuration."""
        if self.mode == "base":
            return launch.base_environment(self.base, env)
        if self.mode in ORDER_STREAMS:
            bound = paths.require(ORDER_BOUND, "bench/tools/order_bound.so")
            return launch.applied({"LD_PRELOAD": launch.preload_value([bound, launch.base_library(self.base)]),
                                   "CORRAL_PLAN": None, "ORDER_BOUND": ORDER_STREAMS[self.mode]}, env)
        if self.mode == "preload":
            # Any CORRAL_ setting left in the caller's environment could give
            # the runtime work: a plan, a mode, statistics not asked for here.
            quiet = {k: v for k, v in (os.environ if env is None else env).items()
                     if not k.startswith("CORRAL_")}
            return launch.environment(base=self.base, stats=stats, env=quiet)
        extra = {}
        if self.mode == "random4":
            extra["CORRAL_RANDOM_POOLS"] = RANDOM_POOLS
        elif self.mode == "dynamic":
            extra.update(launch.dynamic_extra(str(program)))
        elif self.mode == "safe":
            extra.update(launch.dynamic_extra(str(program), switch="CORRAL_SAFE"))
        if self.mode == "corral" and plan is None:
            raise CorralError(f"configuration {self.name} needs a plan")
        return launch.environment(plan=plan, base=self.base, stats=stats, extra=extra, env=env,
                                  program=str(program))


CONFIGS: dict[str, Config] = {c.name: c for c in [
    *(Config(b, b, "base") for b in BASES),
    *(Config(f"corral+{b}", b, "corral") for b in BASES),
    Config("random4+glibc", "glibc", "random4"),
    *(Config(f"dynamic+{b}", b, "dynamic") for b in BASES),
    *(Config(f"safe+{b}", b, "safe") for b in BASES),
    *(Config(f"preload+{b}", b, "preload") for b in BASES),
    *(Config(f"{m}+{b}", b, m) for m in ORDER_STREAMS for b in BASES),
]}

# Dynamic, safe, preload and the yardstick are asked for by name for our
# workloads; the public suite measures plan mode and dynamic mode over
# every base.
ASKED_BY_NAME = ("dynamic", "safe", "preload", *ORDER_STREAMS)
DEFAULT_CONFIGS = tuple(n for n in CONFIGS if CONFIGS[n].mode not in ASKED_BY_NAME)
SUITE_CONFIGS = tuple(n for n in CONFIGS if CONFIGS[n].mode not in ("random4", "safe", "preload", *ORDER_STREAMS))
BASELINE = "glibc"


def select(names: str | None) -> list[Config]:
    """Configurations from a comma-separated list; the glibc baseline is always
    included (first), because every checksum is compared with it."""
    wanted = [n.strip() for n in (names.split(",") if names else DEFAULT_CONFIGS) if n.strip()]
    unknown = [n for n in wanted if n not in CONFIGS]
    if unknown:
        raise CorralError(f"unknown configuration {unknown[0]!r}; known: {', '.join(CONFIGS)}")
    ordered = [BASELINE] + [n for n in dict.fromkeys(wanted) if n != BASELINE]
    return [CONFIGS[n] for n in ordered]
