"""Profiles: reading, finishing (build-ids, symbols, compression), exporting.

The profile format is documented in docs/formats.md ("Profile"); the
Valgrind tool in profiler/ writes it.
"""
