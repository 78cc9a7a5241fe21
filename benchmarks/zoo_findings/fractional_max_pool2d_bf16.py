import torch
import torch.nn.functional as F


def fn(x, samples):
    return F.fractional_max_pool2d(x, 2, output_size=(4, 4), return_indices=True, _random_samples=samples)[1]


torch.manual_seed(53)
x = torch.randn(1, 1, 9, 9, dtype=torch.bfloat16)
samples = torch.rand(1, 1, 2, dtype=torch.bfloat16)
eager = fn(x, samples)
compiled = torch.compile(fn)(x, samples)
expected = fn(x.double(), samples.double())  # the same windows from the same samples, placed in float64
print("indices equal to float64's: eager", torch.equal(eager, expected), "| compiled", torch.equal(compiled, expected))
raise SystemExit(1 if not torch.equal(eager, expected) else 0)  # 1 while eager's bf16 kernel misplaces a window
