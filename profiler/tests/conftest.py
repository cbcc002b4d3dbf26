"""Fixtures of the profiler tests: the built tool and the native queue driver."""

import pytest

from profiler_helpers import require_built


@pytest.fixture(scope="session")
def driver():
    return require_built("affinity_driver")

