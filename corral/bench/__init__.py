"""The benchmark harness: workloads, allocator configurations, alternating
timed runs, cache-miss counts under cachegrind, and the results document
(docs/bench.md). The entry point for other code is harness.run_suite."""
