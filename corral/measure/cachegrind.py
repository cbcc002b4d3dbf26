"""Data-cache misses of one run under cachegrind, with stated cache sizes.

The sizes are fixed (32 KiB 8-way L1, 1 MiB 16-way last level, 64-byte
lines: a per-core L2 like HALO's) so numbers compare across machines.
Cachegrind does not replace malloc, so an LD_PRELOADed allocator (jemalloc,
mimalloc, libcorral.so) is what the simulated program uses: corral's layout
is what gets measured.
"""

import glob
import os
import subprocess
import tempfile

from corral.errors import CorralError
from corral.measure.streams import output_text, stdin_of

CACHE = {"I1": "32768,8,64", "D1": "32768,8,64", "LL": "1048576,16,64"}
# Address translation in the same simulator, a "line" being a 4 KiB page:
# the first level a 64-entry fully associative data TLB, the last a
# 2048-entry 16-way second-level TLB, as on recent x86-64 cores. Its misses
# count page walks as the cache model counts memory accesses: where two
# layouts touch the same lines spread over more pages. The instruction side
# keeps the cache model's sizes (its misses are not read).
PAGES = {"I1": CACHE["I1"], "D1": "262144,64,4096", "LL": "8388608,16,4096"}
# The stated cost of a run in cycles, the weights of Valgrind's own cycle
# estimate: an instruction 1, a first-level miss 10, a last-level miss 100.
L1_MISS_CYCLES = 10
LL_MISS_CYCLES = 100


def estimate(misses: dict) -> int:
    """Cycles of a run under the stated cache model (parse's counters)."""
    return (misses["Ir"] + L1_MISS_CYCLES * (misses["I1"] + misses["D1"])
            + LL_MISS_CYCLES * (misses["ILL"] + misses["LL"]))


# Where a program's own work starts: glibc's __libc_start_main runs the
# program's constructors and main, and exit's handlers; the dynamic linker's
# work and preloaded libraries' constructors (an allocator's set-up) come
# before it. Callgrind starts every new thread with collection off, so each
# thread's own start, glibc's start_thread, turns it on too: a program that
# works on threads (povray's parser and renderer) is counted whole.
PROGRAM_START = ("__libc_start_main*", "start_thread")


def scaled(heap_bytes: int, ratio: int) -> dict | None:
    """A cache model shrunk so that a heap of `heap_bytes` is `ratio` times
    its last level, as a real run's heap is many times a real cache: the
    last level and the first-level data cache scaled alike, by a power of
    two (at least 64 KiB and 2 KiB: 16 ways of 64 sets, 8 ways of 4).
    None when the heap is that large already."""
    ll, d1 = (int(CACHE[k].split(",")[0]) for k in ("LL", "D1"))
    if heap_bytes >= ratio * ll:
        return None
    shrink = 1
    while ll // (shrink * 2) >= max(64 << 10, heap_bytes // ratio):
        shrink *= 2
    if shrink == 1:
        return None
    return {**CACHE, "D1": f"{max(2048, d1 // shrink)},8,64", "LL": f"{ll // shrink},16,64"}


def describe(cache: dict) -> str:
    """'D1 8 KiB, LL 256 KiB'."""
    return ", ".join(f"{k} {int(cache[k].split(',')[0]) >> 10} KiB" for k in ("D1", "LL"))


def command(argv, out_file, steady=False, children=False, cache=None) -> list[str]:
    """The Valgrind command line. `steady` counts only what runs inside
    PROGRAM_START (callgrind, the same cache simulation): a fixed start-up
    cost that does not grow with the input stays out of the comparison.
    `children`: the programs argv starts are simulated too, each writing
    its own file (`out_file` then holds %p). `cache`: another model than
    CACHE (scaled)."""
    cache = cache or CACHE
    # --smc-check=all: libcorral.so rewrites call sites in the program's own
    # text (file-backed), which Valgrind would otherwise keep running from
    # translations made before the rewrite.
    common = ["--cache-sim=yes", "--smc-check=all", *(["--trace-children=yes"] if children else []),
              f"--I1={cache['I1']}", f"--D1={cache['D1']}", f"--LL={cache['LL']}"]
    if steady:
        return ["valgrind", "--tool=callgrind", *common, "--collect-atstart=no",
                *(f"--toggle-collect={start}" for start in PROGRAM_START), f"--callgrind-out-file={out_file}",
                *argv]
    return ["valgrind", "--tool=cachegrind", *common, f"--cachegrind-out-file={out_file}", *argv]


def parse(text: str) -> dict:
    """Counters (data side, and instructions with their misses) from the
    `events:` and `summary:` lines of a cachegrind.out or callgrind.out file."""
    events = summary = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(v) for v in line.split()[1:]]
    if events is None or summary is None:
        raise CorralError("cachegrind output has no events or summary line")
    # callgrind leaves out trailing zero counts
    counts = dict(zip(events, summary + [0] * (len(events) - len(summary))))
    missing = {"Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw"} - counts.keys()
    if missing:
        raise CorralError(f"cachegrind output lacks {', '.join(sorted(missing))} (cache simulation off?)")
    return {"D1": counts["D1mr"] + counts["D1mw"], "LL": counts["DLmr"] + counts["DLmw"],
            "D1r": counts["D1mr"], "D1w": counts["D1mw"], "LLr": counts["DLmr"], "LLw": counts["DLmw"],
            "Dr": counts["Dr"], "Dw": counts["Dw"],
            # Instruction side, absent from files that lack it (estimate needs them).
            "Ir": counts.get("Ir", 0), "I1": counts.get("I1mr", 0), "ILL": counts.get("ILmr", 0)}


def measure(argv, env, stdin=None, steady=False, children=False, cache=None) -> tuple[dict, str]:
    """(misses, program stdout) of one run of argv under cachegrind, reading
    the file `stdin` (or nothing). With `steady`, start-up is left out
    (command); a program that never enters PROGRAM_START (static, or not
    glibc's) is measured whole instead. With `children`, the counts are
    those of every process the run made, added (a copy made by fork that
    does not exec repeats its parent's counts up to the fork: a shell's
    subshells are small)."""
    # Dynamic mode draws its sampling intervals from the clock unless given
    # a seed; with one, a simulated run of it is the same every time, and two
    # configurations differ by their layouts, not by where they sampled.
    env = {**(os.environ if env is None else env)}
    env.setdefault("CORRAL_DYN_SEED", "1")
    with tempfile.TemporaryDirectory(prefix="corral-cg-") as tmp, stdin_of(stdin) as given:
        proc = subprocess.Popen(command(argv, os.path.join(tmp, "cg.%p.out"), steady, children, cache),
                                env=env, stdin=given, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate()
        stdout, stderr = output_text(out), err.decode(errors="replace")
        top = os.path.join(tmp, f"cg.{proc.pid}.out")
        outputs = sorted(glob.glob(os.path.join(tmp, "cg.*.out"))) if children else [top]
        if proc.returncode != 0 or not os.path.exists(top):
            tail = stderr.strip().splitlines()[-1:] or ["no output"]
            raise CorralError(f"cachegrind run failed (exit {proc.returncode}): {tail[0]}")
        counts: dict = {}
        for out_file in outputs:
            with open(out_file) as f:
                for key, value in parse(f.read()).items():
                    counts[key] = counts.get(key, 0) + value
    if steady and counts["Ir"] == 0:
        return measure(argv, env, stdin, children=children, cache=cache)
    return counts, stdout
