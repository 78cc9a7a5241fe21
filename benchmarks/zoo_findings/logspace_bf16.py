"""torch.logspace(..., dtype=torch.bfloat16): compiled differs from eager by up to 4 bf16 ULPs, and is the closer of
the two to the exact value: eager's bf16 kernel steps the exponent in bf16, Inductor's decomposition in fp32."""

import torch

cases = [(1, 1.2, 4, 10.0), (4.3, -3, 2, 10.0)]
for start, end, steps, base in cases:
    f = lambda: torch.logspace(start, end, steps, base=base, dtype=torch.bfloat16)
    eager, compiled = f(), torch.compile(f)()
    exact = torch.logspace(start, end, steps, base=base, dtype=torch.float64)
    print(
        f"logspace({start}, {end}, {steps}): eager {eager.tolist()} compiled {compiled.tolist()} exact {[round(v, 4) for v in exact.tolist()]}"
    )
    print(
        "  |eager - exact| max",
        (eager.double() - exact).abs().max().item(),
        " |compiled - exact| max",
        (compiled.double() - exact).abs().max().item(),
    )
