"""How many bytes one object takes in memory under each base allocator and
in corral's pools: what packing a group saves.

The base figures are Debian 12's allocators as measured (median address
step between consecutive allocations of one size, 2026-11-24):
- glibc puts an 8-byte header before each chunk and rounds the chunk to
  16 bytes, 32 at least: a 24-byte object takes 32 bytes;
- jemalloc and mimalloc have the same classes here: 8, then 16-byte steps
  to 128, then four classes per doubling (160, 192, 224, 256, 320, ...):
  a 24-byte object also takes 32.
corral's pools step by 8 bytes up to 64 and by 16 to 128 laid out by size,
by 16-byte granules when sizes mix (corral/plan/layout.py).
"""

from corral.plan.layout import GRANULE, SMALL_MAX, class_size, size_class

BASES = ("glibc", "jemalloc", "mimalloc")


def _round(size: int, step: int) -> int:
    return -(-size // step) * step


def base_slot(base: str, size: int) -> int:
    size = max(size, 1)
    if base == "glibc":
        return max(32, _round(size + 8, 16))
    if size <= 8:
        return 8
    if size <= SMALL_MAX:
        return _round(size, 16)
    step = 1 << ((size - 1).bit_length() - 3)     # a quarter of the power of two below
    return _round(size, step)


def corral_slot(size: int, by_size: bool) -> int:
    size = max(size, 1)
    if not by_size:
        return _round(size, GRANULE)
    block = class_size(size_class(size))
    return block if block >= size else _round(size, GRANULE)   # past the largest class


def packing_ratio(doc: dict, members: list[int], by_size: bool) -> float:
    """Bytes the group's objects take in its pool over the bytes they take
    under the base allocator that packs them best (so a saving holds
    whichever base the plan runs over); below 1 the pool packs tighter.
    Each context counts its mean object size, weighted by its allocations."""
    contexts = doc["contexts"]
    sizes = [(contexts[m]["allocs"], -(-contexts[m].get("bytes", 0) // max(contexts[m]["allocs"], 1)))
             for m in members if contexts[m].get("allocs")]
    if not sizes:
        return 1.0
    pooled = sum(n * corral_slot(s, by_size) for n, s in sizes)
    best_base = min(sum(n * base_slot(b, s) for n, s in sizes) for b in BASES)
    return pooled / best_base
