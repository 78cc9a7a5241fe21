"""The minimizer: shrink a divergent program to a small, self-checking repro (not written yet)."""
