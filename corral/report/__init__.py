"""The benchmark report: a results JSON of `corral bench` in, one
self-contained HTML file out (tables, HALO-style charts, group pictures).

Reporters here are pure functions of the results document; only html.write
touches the file system (to read group pictures and write the page).
"""
