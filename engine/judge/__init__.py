"""Judging: per-element metrics, the oracle's rules and the verdict vocabulary, as pure functions.

Tensors (or arrays) in, figures and judgements out; nothing here compiles, seeds, patches a config or
touches any other torch process state (but for torch's intra-op thread count, which the chunked metrics
set to one while they run and then restore), so every rule can be tested on hand-made values. Importing
engine.judge.verdicts or engine.judge.views does not import torch (the app and the caller's side use only
the vocabulary and the views of stored arrays).
"""
