"""The far side of the process boundary: everything that runs in the warm worker and its forked children.

User code runs only here, in a child forked per check (worker.py), sandboxed (sandbox.py). A check:
execution.py loads the program and runs each call through comparison.py (eager, compiled, and the fp64
references of reference.py, with casting.py, leaves.py, seeding.py and gradients.py), whose
leaf_builder.py hands the numbers to engine.judge; errors.py says how a step fails; capture.py keeps
Inductor's generated code; bisect.py and intermediates.py are the localization steps that run after a check.

The caller's side (engine/runner.py and everything above it) never imports this package: it starts the
worker by module name (engine.protocol.WORKER_MODULE). This package imports nothing of the caller's side.
The single exception is `engine.check(..., in_process=True)`, which asks for exactly that.
"""
