"""The debian suite's programs (corral/bench/suite.py): installed by Debian
packages, not built. Here: refusing, in one message, the programs that are
not installed; the package's version for the results; and each program as a
Workload reading its generated inputs (corral/bench/suite_inputs.py).

Nothing else in corral needs these packages: only `corral bench` with a
suite that holds them looks for them.
"""

import os
import subprocess
from pathlib import Path

from corral.bench import suite, suite_inputs
from corral.bench.workloads import Workload
from corral.errors import CorralError


def require(programs: list[suite.Program]) -> None:
    """Refuses when any program's binary is missing, naming every missing
    one and the packages that install them."""
    missing = [p for p in programs if not os.access(p.binary, os.X_OK)]
    if missing:
        what = ", ".join(f"{p.name} ({p.binary}, Debian package {p.package})" for p in missing)
        packages = list(dict.fromkeys(p.package for p in missing))
        raise CorralError(f"the debian suite runs installed programs, and {what} "
                          f"{'is' if len(missing) == 1 else 'are'} not installed; "
                          + suite.get_packages(packages))


def version(package: str) -> str | None:
    """The installed version, for the record (results name the build measured)."""
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                              capture_output=True, text=True, errors="replace")
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def workload(program: suite.Program, inputs: Path) -> Workload:
    found = version(program.package)
    build = f"Debian {program.package} {found}" if found else f"Debian {program.package}"
    args = (suite_inputs.expand(a, inputs) for a in (program.train, program.measure, program.cache))
    return Workload(program.name, f"{program.suite}: {program.description} ({build})", *args,
                    path=program.binary, checksum="stdout")


def workloads(programs: list[suite.Program]) -> list[Workload]:
    """Checks the binaries first (one message for all), then writes the inputs."""
    require(programs)
    names = [n for p in programs for a in (p.train, p.cache, p.measure) for n in suite_inputs.named(a)]
    inputs = suite_inputs.write(names)
    return [workload(p, inputs) for p in programs]
