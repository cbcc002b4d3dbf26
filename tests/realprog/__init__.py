"""Helpers for tests/test_real_programs.py: real programs under libcorral.so."""
