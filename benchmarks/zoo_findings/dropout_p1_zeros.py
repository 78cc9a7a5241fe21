import torch
import torch.nn.functional as F


def fn(x):
    return F.dropout(x, p=1.0, training=True)


x = torch.tensor([-2.0, 3.0, float("nan"), float("inf"), -0.0])
eager = fn(x)
compiled = torch.compile(fn)(x)
print("eager   ", eager.tolist())
print("compiled", compiled.tolist())
expected = [v * 0.0 for v in x.tolist()]  # what eager's kernel computes: the input times zero
print("Python  ", expected)
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if not torch.equal(eager.isnan(), compiled.isnan()) else 0)
