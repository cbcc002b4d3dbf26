"""One run of a program: wall time, peak RSS from the kernel, output.

The child's rusage comes from os.wait4 on its own pid, so the peak RSS is the
child's alone (not the harness's, not earlier children's).
"""

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass


@dataclass
class RunResult:
    seconds: float
    rss_kb: int
    returncode: int
    stdout: str
    stderr: str


def run_once(argv, env, clock=time.perf_counter) -> RunResult:
    # Output goes to files rather than pipes: a chatty program cannot block
    # on a full pipe while we wait, and no reader thread shares the cores.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = clock()
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = clock() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return RunResult(seconds, int(usage.ru_maxrss), proc.returncode,
                         out.read().decode(errors="replace"), err.read().decode(errors="replace"))
