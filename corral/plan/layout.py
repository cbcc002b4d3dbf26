"""Whether a group's objects share chunks whatever their size (the plan's
`layout GID mixed`), or each size class gets chunks of its own (`layout GID
by-size`). A group of one size class is laid out by size: its objects are
packed as tightly as C allows (8-byte steps up to 64 bytes, 16-byte steps
to 128), where a mixed chunk places
them in 16-byte granules.

The runtime reuses a freed slot for an object of the same size only. In a
group whose objects stay until late in the run that does not matter: they
sit in allocation order, and objects made together stay together. In a
group whose objects are freed and made again all the time, the first
arrangement of sizes stays for good, so each size's live objects end up
spread over the memory of all sizes, and a walk over one kind touches more
lines than a size-class allocator would (docs/planner.md, "Layout").
"""

from dataclasses import dataclass

GRANULE = 16
LINE = 64              # 8-byte steps up to here
SMALL_MAX = 128
SIZE_CLASSES = 29      # the runtime's CORRAL_SIZE_CLASSES (runtime/src/base/size_class.h)


def size_class(size: int) -> int:
    """The runtime's size class of an object of `size` bytes (size_class.h):
    8-byte steps from 16 to 64 bytes, 16-byte steps to 128, then two per
    doubling."""
    if size <= LINE:
        return 0 if size <= 16 else (size + 7) // 8 - 2
    if size <= SMALL_MAX:
        return (size + 15) // GRANULE + 2
    k = -(-size // GRANULE)
    top = (k - 1).bit_length() - 1
    c = 11 + 2 * (top - 3) + (((k - 1) >> (top - 1)) & 1)
    return min(c, SIZE_CLASSES - 1)


def class_size(c: int) -> int:
    """Block size of class `c`, its largest size (corral_class_size)."""
    if c < 7:
        return 16 + 8 * c
    if c < 11:
        return GRANULE * (c - 2)
    top = 3 + (c - 11) // 2
    return ((2 << top) if (c - 11) & 1 else (3 << (top - 1))) * GRANULE


@dataclass(frozen=True)
class Layout:
    by_size: bool
    classes: int              # size classes the group's contexts allocate in (at least)
    lifetime_share: float     # mean object lifetime as a share of the profiled run
    # Laid out by size, or with one size class only, a group brings together
    # objects of one size class at a time; these are the affinity weights of
    # same-class pairs it keeps together (both contexts inside) and cuts (one
    # inside, one outside). None for a mixed group of several classes.
    same_class_kept: float | None = None
    same_class_cut: float | None = None

    @property
    def pays(self) -> bool:
        """Such a group must keep more same-class affinity than it cuts, or it
        leaves the program's objects worse placed than a size-class allocator
        would. A mixed group of several classes always passes: it keeps
        objects of different sizes together, which size classes cannot."""
        return self.same_class_kept is None or self.same_class_kept > self.same_class_cut


def classes_of(context: dict) -> set[int]:
    return {size_class(context["min_size"]), size_class(context["max_size"])}


def choose(doc: dict, members: list[int], turnover: float) -> Layout:
    """By size when the group has one size class, or its objects, weighted
    by count, live on average less than `turnover` of the run.
    Objects never freed count as living the whole run. Unless the group
    stays a mixed group of several classes, also the same-class affinity it
    keeps and cuts (Layout.pays)."""
    run = max(1, doc["totals"].get("instructions") or 1)
    classes, allocs, lived = set(), 0, 0.0
    for i in members:
        c = doc["contexts"][i]
        classes |= classes_of(c)
        unfreed = c["allocs"] - c["frees"]
        allocs += c["allocs"]
        lived += min(c["lifetime"], c["frees"] * run) / run + max(0, unfreed)
    share = lived / allocs if allocs else 1.0
    by_size = len(classes) == 1 or share < turnover
    if not by_size:
        return Layout(False, len(classes), share)
    inside, contexts = set(members), doc["contexts"]
    kept = cut = 0.0
    for a, b, w in doc["edges"]:
        if (a in inside or b in inside) and classes_of(contexts[a]) & classes_of(contexts[b]):
            if a in inside and b in inside:
                kept += w
            else:
                cut += w
    return Layout(by_size, len(classes), share, kept, cut)
