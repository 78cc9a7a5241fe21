import torch


def fn():
    return torch.logspace(4.3, -3, 2, dtype=torch.bfloat16)


eager = fn()
compiled = torch.compile(fn)()
expected = torch.logspace(4.3, -3, 2, dtype=torch.float64)  # 10**4.3 = 19952.6, 10**-3
print("eager   ", eager.tolist())
print("compiled", compiled.tolist())
print("float64 ", expected.tolist(), "-> bf16", expected.bfloat16().tolist())
raise SystemExit(1 if not torch.equal(eager, expected.bfloat16()) else 0)  # 1 while eager rounds 4.3 before the power
