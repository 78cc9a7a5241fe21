import torch
import torch.nn.functional as F


def fn(x, samples):
    return F.fractional_max_pool3d(x, 2, output_size=4, return_indices=True, _random_samples=samples)[1]


torch.manual_seed(0)
x = torch.randn(1, 1, 7, 7, 7)
samples = torch.tensor([[[0.05, 0.45, 0.95]]])
eager = fn(x, samples)
compiled = torch.compile(fn)(x, samples)
print(int((eager != compiled).sum()), "of", eager.numel(), "elements differ")
i = (0, 0, 1, 2, 2)
print("at", list(i), "eager", eager[i].item(), "| compiled", compiled[i].item())
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if not torch.allclose(eager, compiled, rtol=0, atol=0, equal_nan=True) else 0)
