"""One run of a program: wall time, peak RSS from the kernel, output.

The peak RSS is the child's ru_maxrss from wait4, taken by a small launcher
(build/bench/rss_exec, bench/tools/rss_exec.c): Linux keeps a process's
peak across exec, so a child forked from this Python process (large once
the planner is loaded) would report our size, not the program's. The
launcher costs the same ~1 ms in every configuration, so ratios are fair.
The program's environment is handed to the launcher as arguments, so the
allocator under test is preloaded into the program only.
"""

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass

from corral import paths
from corral.measure.streams import output_text, stdin_of

RSS_EXEC = paths.BENCH_DIR / "rss_exec"


@dataclass
class RunResult:
    seconds: float
    rss_kb: int
    returncode: int
    stdout: str
    stderr: str


def run_once(argv, env, stdin=None, clock=time.perf_counter) -> RunResult:
    """One run of argv with `env`, reading the file `stdin` (or nothing)."""
    launcher = str(paths.require(RSS_EXEC, "bench launcher rss_exec"))
    read_end, write_end = os.pipe()
    # Output goes to files rather than pipes: a chatty program cannot block
    # on a full pipe while we wait, and no reader thread shares the cores.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, stdin_of(stdin) as given:
        try:
            start = clock()
            child_env = [f"{k}={v}" for k, v in env.items()]
            proc = subprocess.Popen([launcher, str(write_end), *child_env, "--", *argv],
                                    env={}, stdin=given,
                                    stdout=out, stderr=err, pass_fds=(write_end,))
            os.close(write_end)
            write_end = None
            returncode = proc.wait()
            seconds = clock() - start
            with os.fdopen(read_end) as report:
                read_end = None
                text = report.read().strip()
        finally:
            for fd in (read_end, write_end):
                if fd is not None:
                    os.close(fd)
        out.seek(0)
        err.seek(0)
        return RunResult(seconds, int(text) if text.isdigit() else 0, returncode,
                         output_text(out.read()), err.read().decode(errors="replace"))
