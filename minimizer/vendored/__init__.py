"""The code a repro.py carries, as real modules: each file's text below its `# ---- vendored ----` line is pasted
into the script verbatim (minimizer/repro.py picks the files a signature needs); above that line are only the
imports that let the file load on its own, for tests and the linter.

- judge.py: the engine's verdict rules (engine/judge/oracle.py over engine/judge/metrics.py), re-expressed on
  whole tensors, without the chunking, the float32 twin, the intermediates or the check-wide budget split that a
  one-call repro never needs;
- elements.py: the element rule (engine/judge/elements.py, family.py) for bf16/fp16 values, the same way (pasted
  only where the check judged bf16/fp16 values);
- walker.py: engine/child/leaves.py's naming for tensors, containers, dataclasses, namedtuples and objects'
  attributes (`out.cache.layers[0].keys`); a program that may hold what it refuses (a pytree node named by its
  keys, a numpy value) gets the engine's own walker, pasted whole;
- harness.py: the runs (eager, compiled, the fp64 reference) and the comparison of every leaf.

tests/test_vendored_judge.py holds judge.py + elements.py equal to the engine's judge (the same verdict and
symptoms on a corpus of values) and walker.py equal to the engine's walker, so the two cannot drift.
"""
