"""The short human summary `corral profile` prints: totals and the hottest
contexts with their innermost frames."""

from rich.console import Console
from rich.table import Table

from corral.console import table as console_table
from corral.profile.reader import Profile

SHOWN_CONTEXTS = 5
SHOWN_FRAMES = 3


def frame_label(frame) -> str:
    if frame.fn:
        return frame.fn + (f" {frame.file.rsplit('/', 1)[-1]}:{frame.line}" if frame.file else "")
    return f"{frame.module.rsplit('/', 1)[-1]}+{frame.offset:#x}"


def hottest_table(profile: Profile, n: int = SHOWN_CONTEXTS) -> Table:
    table = console_table(f"hottest of {len(profile.contexts)} contexts",
                          ("context>", "allocs>", "accesses>", "loop edge>", "frames (innermost first)"))
    for i in profile.top_contexts(n):
        c = profile.contexts[i]
        frames = " < ".join(frame_label(f) for f in profile.context_frames(i)[:SHOWN_FRAMES])
        table.add_row(str(i), str(c["allocs"]), str(profile.accesses(i)),
                      str(profile.edge_weight(i, i)), frames)
    return table


def print_summary(profile: Profile, console: Console) -> None:
    totals = profile.totals
    console.print(f"corral: profiled {totals['allocs']} allocations in {len(profile.contexts)} contexts, "
                  f"{totals['accesses']} heap accesses, {len(profile.edges)} affinity edges")
    if profile.contexts:
        console.print(hottest_table(profile))
