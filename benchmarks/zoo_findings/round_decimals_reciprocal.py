"""`torch.round(x, decimals=2)`: Inductor's decomposition computes `round(x * 100) * (1 / 100)`, eager's kernel
`nearbyint(x * 100) / 100`. 1/100 is not exact, so about a quarter of float32 elements (an eighth in float64)
come out one step away from eager's value, and eager's is always the one nearer the float64 result
(9.85: eager 9.850000381469727, the float nearest 9.85; compiled 9.84999942779541). CPU, default config."""

import sys

import torch


def f(x):
    return torch.round(x, decimals=2)


torch.manual_seed(0)
x = torch.randn(10000) * 10
eager, compiled = f(x), torch.compile(f)(x)
ref = f(x.double())
differ = eager != compiled
eager_nearer = ((eager.double() - ref).abs() < (compiled.double() - ref).abs())[differ].sum().item()
i = int(differ.nonzero()[0]) if differ.any() else 0
print(f"x = {x[i].item()!r}: eager {eager[i].item()!r} | compiled {compiled[i].item()!r} | float64 {ref[i].item()!r}")
print(f"{int(differ.sum())} of {x.numel()} float32 elements differ; eager nearer the float64 result in {eager_nearer}")
sys.exit(1 if differ.any() else 0)
