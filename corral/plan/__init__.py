"""The planner: from a profile to a plan (docs/planner.md).

graph.py builds the filtered affinity graph, grouping.py forms groups
(HALO section 4.2), selectors.py finds the call sites that identify them at
run time (HALO section 4.3) and checks them, planfile.py reads and writes the
plan format (docs/formats.md), planner.py ties these together, summary.py and
picture.py show the result.
"""
