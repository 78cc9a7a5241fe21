"""Divergence Explorer's front ends, each in its own room, above the minimizer and the engine.

- `web/`: the Streamlit web app (`divergence serve`).
- `cli/`: the `divergence` command line.
- `sweep/`: `divergence sweep` and the web app's Sweeps page draw on it: a corpus of programs times a matrix of
  check options.
- `store.py` (the runs kept in SQLite, shared by the web app and the sweep) and `gallery.py` (the sample
  cases) lie under all three.

import-linter holds these layers (pyproject.toml).
"""
