"""The benchmark harness: workloads, allocator configurations, the public
suite, and the results document (docs/bench.md); the runs themselves, their
timing and cache-miss counts under cachegrind are corral.measure's. The
entry point for other code is harness.run_suite."""
