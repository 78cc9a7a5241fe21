import numpy
import torch


def fn(x):
    return torch.var_mean(x)


x = torch.tensor([])
eager = fn(x)[1]
compiled = torch.compile(fn)(x)[1]
print("eager   ", eager.tolist())
print("compiled", compiled.tolist())
expected = float(numpy.mean(x.double().numpy()))
print("NumPy   ", expected)
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if not torch.equal(eager.isnan(), compiled.isnan()) else 0)
