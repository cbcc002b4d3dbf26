"""Checking a plan on the training run before it is written (corral optimize)."""
