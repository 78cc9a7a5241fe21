"""What the two sides of the process boundary agree on, by name: no code of either side, no torch.

The caller's side (engine/runner.py and above) starts the worker by module name and reads what its
children leave in a run directory; the far side (engine/child/) writes it. Both import only this.
"""

from __future__ import annotations

WORKER_MODULE = "engine.child.worker"  # `python -m` this to start a warm worker
OUTPUT_LOG = "output.log"  # a child's stdout and stderr, in its run directory

# the environment of the second warm worker that runs Triton's interpreter (engine/child/triton_cpu.py):
# Inductor's and triton's @jit helpers read it at import, so a child of the usual worker cannot switch
TRITON_CPU_WORKER_ENV = {"TRITON_INTERPRET": "1"}

# a derived-input probe whose inputs make no sense for the program says so with this prefix
NOT_APPLICABLE = "probe not applicable: "
