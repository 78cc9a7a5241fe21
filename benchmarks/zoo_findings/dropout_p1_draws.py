import torch
import torch.nn.functional as F

torch._inductor.config.fallback_random = True


def fn(x, y):
    return (F.dropout(x, p=1.0, training=True), F.dropout(y, p=0.5, training=True))


x = torch.tensor([1.5409961, -0.2934289, -2.1787894, 0.56843126])
y = torch.tensor([-1.0845224, -1.3985955, 0.40334684, 0.83802634, -0.7192576, -0.40334353, -0.59663534, 0.18203649])
torch.manual_seed(0)
eager = fn(x, y)[1]
torch.manual_seed(0)
compiled = torch.compile(fn)(x, y)[1]
print("eager   ", eager.tolist())
print("compiled", compiled.tolist())
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if not torch.allclose(eager, compiled, rtol=0, atol=0, equal_nan=True) else 0)
