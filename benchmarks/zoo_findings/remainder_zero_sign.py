import torch


def fn(x, y):
    return torch.remainder(x, y)


x = torch.tensor([-6.0, 6.0, -6.0, 6.0])
y = torch.tensor([-2.0, -2.0, 2.0, 2.0])
eager = fn(x, y)
compiled = torch.compile(fn)(x, y)
print("eager   ", eager.tolist())
print("compiled", compiled.tolist())
expected = [a % b for a, b in zip(x.tolist(), y.tolist(), strict=True)]
print("Python  ", expected)
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if not torch.equal(compiled.signbit(), torch.tensor(expected).signbit()) else 0)
