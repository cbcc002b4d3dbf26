"""Measuring: one run of a program timed (runner, runs), simulated under
cachegrind with a stated cache model (cachegrind), the order of timed runs
and the arithmetic on them (timing), verdicts between two configurations
on that evidence (evidence), what the runtime's statistics say
(runtime_stats), and a child's standard streams (streams).

The planner (cost model), validation, the benchmark harness and the
report use it; it imports none of them."""
