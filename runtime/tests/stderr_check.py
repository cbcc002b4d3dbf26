"""Every heap test reads the program's stderr: a `corral: warning` the test
did not ask for (a spurious double free, a refused plan, an invalid free)
fails it, even when the program's own checks passed."""

import re

WARNING = re.compile(r"^corral: warning: .*$", re.M)


def assert_expected_warnings(stderr: str, expected=()) -> None:
    """Each `corral: warning:` line must match one of the `expected` regular
    expressions (searched within the line); each expected one must appear."""
    lines = WARNING.findall(stderr or "")
    patterns = [re.compile(p) for p in expected]
    unexpected = [l for l in lines if not any(p.search(l) for p in patterns)]
    assert not unexpected, "unexpected corral warnings:\n" + "\n".join(unexpected)
    missing = [p.pattern for p in patterns if not any(p.search(l) for l in lines)]
    assert not missing, f"expected corral warnings not seen: {missing}\nstderr:\n{stderr}"
