"""Judging: per-element metrics, the oracle's rules and the verdict vocabulary, as pure functions.

Tensors (or arrays) in, figures and judgements out; nothing here compiles, seeds, patches a config or
touches any other torch process state, so every rule can be tested on hand-made values. Importing
engine.judge.verdicts does not import torch (the app and the caller's side use only the vocabulary).
"""
