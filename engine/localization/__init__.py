"""Localization: where a divergence starts, and probes that look for more of it (the caller's side).

ablation.py (the backend ladder), bisector.py (PyTorch's CompilerBisector), intermediates.py (the first
diverging graph node) and localize.py (all three) submit checks to the worker; probes.py re-runs a check
with derived inputs and call patterns. The bisector and the intermediates need work inside the check's
own child: those halves are engine/child/bisect.py and engine/child/intermediates.py, and what they
write back is a record of reports.py. No torch on this side.
"""
