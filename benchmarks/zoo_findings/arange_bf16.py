import torch


def fn():
    return torch.arange(0, 8997, dtype=torch.bfloat16)


eager = fn()
compiled = torch.compile(fn)()
expected = torch.arange(0, 8997, dtype=torch.float64).bfloat16()  # each integer rounded to its nearest bf16
off = int((eager != expected).sum()), int((compiled != expected).sum())
print("elements off the nearest bf16: eager", off[0], "| compiled", off[1])
i = 4113
print("at", i, "eager", eager[i].item(), "| compiled", compiled[i].item(), "| nearest bf16", expected[i].item())
# exits 1 while compile changes the values, 0 once it is fixed
raise SystemExit(1 if not torch.equal(compiled, eager) else 0)
