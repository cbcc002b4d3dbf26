"""The planner's parameters, their defaults and their command-line options.

Defined once here; `corral plan` and `corral optimize` both add them.
docs/planner.md explains each one.
"""

from dataclasses import dataclass

from corral.errors import CorralError


# Dynamic mode's defaults (CORRAL_DYN_MIN_OBJECTS, CORRAL_DYN_MAX_SIZE, docs/dynamic.md).
SITE_POOL_MIN_OBJECTS = 100
SITE_POOL_MAX_SIZE = 128


@dataclass(frozen=True)
class PlanOptions:
    # Keep the hottest contexts that together make this share of all accesses
    # (HALO keeps 90%): the cold tail is noise and costs selector sites.
    coverage: float = 0.90
    # Contexts whose objects average more than this many bytes are left out
    # of the graph: the runtime groups nothing larger (CORRAL_MAX_SIZE,
    # 4096 by default, HALO's limit too).
    max_object_size: int = 4096
    # Edges lighter than this are dropped. A string ending in % is a share of
    # all profiled accesses, so one default suits small and large profiles.
    min_weight: str = "0.1%"
    # Merge tolerance T of the merge benefit (HALO finds 5% works well).
    tolerance: float = 0.05
    # A group stops growing at this many contexts.
    max_group_size: int = 16
    # A group is kept only if its internal affinity is at least this share of
    # all accesses: a pool for a handful of accesses costs more than it gains.
    group_threshold: float = 0.01
    # Selectors may only use sites within this many frames of the allocation:
    # the runtime walks at most this far.
    max_depth: int = 16
    # Frames added to the deepest site a selector needs, because a profiled
    # context is recursion-reduced and a site may sit deeper on the real stack.
    depth_margin: int = 2
    # A clause may also catch ungrouped contexts whose allocations add up to
    # at most this share of its member's: the deeper site that would keep
    # them out costs every allocation through that path a longer walk, and
    # a few cold objects in a pool cost next to nothing.
    absorb: float = 0.01
    # A group whose objects span several size classes gets a chunk per size
    # class when its objects live on average less than this share of the
    # profiled run (corral/plan/layout.py); 0 never separates sizes.
    turnover: float = 0.25
    # A group whose objects the allocator underneath already places next to
    # each other at least this often (the profiler's placement model,
    # corral/plan/placement.py) is not grouped: a pool would change little
    # and identifying its allocations costs every allocation a walk. 1: off.
    together: float = 0.9
    # The cost model (corral/plan/cost.py): the share of a group's pairs of
    # objects used together, and apart under the allocator underneath, whose
    # second use would miss; and the margin by which a group's expected gain
    # must exceed its cost, as a share of the cost.
    miss_share: float = 0.25
    min_gain: float = 0.1
    # Also give each hot context that no group took a pool of its own, as
    # dynamic mode would (DPA's thresholds: SITE_POOL_MIN_OBJECTS objects
    # of at most SITE_POOL_MAX_SIZE bytes on average), whether or not the
    # allocator underneath keeps its objects together on the training
    # heap: validation's "site pools" candidate, HALO's groups and dynamic
    # mode's layout combined (docs/planner.md, "Validation").
    site_pools: bool = False

    def min_edge_weight(self, total_accesses: float) -> float:
        """The absolute edge-weight threshold for a profile with this many accesses."""
        text = str(self.min_weight).strip()
        try:
            if text.endswith("%"):
                return float(text[:-1]) / 100.0 * total_accesses
            return float(text)
        except ValueError:
            raise CorralError(f"--min-weight {self.min_weight!r} is neither a number nor a percentage")

    def check(self) -> "PlanOptions":
        if not 0 < self.coverage <= 1:
            raise CorralError("--coverage must be in (0, 1]")
        if not 0 <= self.tolerance < 1:
            raise CorralError("--tolerance must be in [0, 1)")
        if self.max_object_size < 1:
            raise CorralError("--max-object-size must be at least 1")
        if self.max_group_size < 1:
            raise CorralError("--max-group-size must be at least 1")
        if not 0 <= self.group_threshold <= 1:
            raise CorralError("--group-threshold must be in [0, 1]")
        if self.max_depth < 1 or self.depth_margin < 0:
            raise CorralError("--max-depth must be positive and --depth-margin not negative")
        if not 0 <= self.absorb < 1:
            raise CorralError("--absorb must be in [0, 1)")
        if not 0 <= self.turnover <= 1:
            raise CorralError("--turnover must be in [0, 1]")
        if not 0 < self.together <= 1:
            raise CorralError("--together must be in (0, 1]")
        if not 0 <= self.miss_share <= 1:
            raise CorralError("--miss-share must be in [0, 1]")
        if self.min_gain < 0:
            raise CorralError("--min-gain must not be negative")
        if self.min_edge_weight(1.0) < 0:
            raise CorralError("--min-weight must not be negative")
        return self


DEFAULTS = PlanOptions()


def add_arguments(p) -> None:
    g = p.add_argument_group("planning")
    g.add_argument("--coverage", type=float, default=DEFAULTS.coverage, metavar="SHARE",
                   help="keep the hottest contexts that cover this share of accesses "
                        f"(default: {DEFAULTS.coverage})")
    g.add_argument("--max-object-size", type=int, default=DEFAULTS.max_object_size, metavar="BYTES",
                   help="leave out contexts whose objects average more than this; match the "
                        f"runtime's CORRAL_MAX_SIZE (default: {DEFAULTS.max_object_size})")
    g.add_argument("--min-weight", default=DEFAULTS.min_weight, metavar="W",
                   help="drop affinity edges lighter than W, a weight or a percentage of all "
                        f"accesses (default: {DEFAULTS.min_weight.replace('%', '%%')})")
    g.add_argument("--tolerance", type=float, default=DEFAULTS.tolerance, metavar="T",
                   help=f"merge tolerance of the merge benefit (default: {DEFAULTS.tolerance})")
    g.add_argument("--max-group-size", type=int, default=DEFAULTS.max_group_size, metavar="N",
                   help=f"most contexts in one group (default: {DEFAULTS.max_group_size})")
    g.add_argument("--group-threshold", type=float, default=DEFAULTS.group_threshold, metavar="SHARE",
                   help="keep a group only if its affinity weight is this share of all accesses "
                        f"(default: {DEFAULTS.group_threshold})")
    g.add_argument("--max-depth", type=int, default=DEFAULTS.max_depth, metavar="N",
                   help="selectors use call sites at most N frames from the allocation "
                        f"(default: {DEFAULTS.max_depth})")
    g.add_argument("--depth-margin", type=int, default=DEFAULTS.depth_margin, metavar="N",
                   help="frames added to the deepest selector site for the runtime's walk depth "
                        f"(default: {DEFAULTS.depth_margin})")
    g.add_argument("--absorb", type=float, default=DEFAULTS.absorb, metavar="SHARE",
                   help="a selector clause may catch ungrouped contexts with up to this share of "
                        f"its member's allocations, to stay shallow (default: {DEFAULTS.absorb})")
    g.add_argument("--turnover", type=float, default=DEFAULTS.turnover, metavar="SHARE",
                   help="give each size class of a group its own chunks when the group's objects "
                        "live on average less than this share of the run; 0: never "
                        f"(default: {DEFAULTS.turnover})")
    g.add_argument("--together", type=float, default=DEFAULTS.together, metavar="SHARE",
                   help="leave out a group whose objects the allocator underneath would already "
                        "place next to each other this often (profiler's placement model), unless "
                        f"its pool packs them tighter; 1: never (default: {DEFAULTS.together})")
    g.add_argument("--miss-share", type=float, default=DEFAULTS.miss_share, metavar="SHARE",
                   help="cost model: share of a group's pairs used together, and placed apart by "
                        f"the allocator underneath, that would miss (default: {DEFAULTS.miss_share})")
    g.add_argument("--min-gain", type=float, default=DEFAULTS.min_gain, metavar="SHARE",
                   help="cost model: keep a group only if its expected gain exceeds its cost by "
                        f"this share of the cost (default: {DEFAULTS.min_gain})")


def from_args(args) -> PlanOptions:
    return PlanOptions(coverage=args.coverage, min_weight=args.min_weight,
                       tolerance=args.tolerance, max_group_size=args.max_group_size,
                       group_threshold=args.group_threshold, max_depth=args.max_depth,
                       depth_margin=args.depth_margin, absorb=args.absorb, turnover=args.turnover,
                       together=args.together, miss_share=args.miss_share, min_gain=args.min_gain,
                       max_object_size=args.max_object_size).check()
