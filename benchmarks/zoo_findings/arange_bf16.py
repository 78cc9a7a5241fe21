import torch


def fn():
    return torch.arange(0, 8997, dtype=torch.bfloat16)


eager = fn()
compiled = torch.compile(fn)()
expected = torch.arange(0, 8997, dtype=torch.float64).bfloat16()  # each integer rounded to its nearest bf16
print("elements off the nearest bf16: eager", int((eager != expected).sum()), "| compiled", int((compiled != expected).sum()))
i = 4113
print("at", i, "eager", eager[i].item(), "| compiled", compiled[i].item(), "| nearest bf16", expected[i].item())
raise SystemExit(1 if not torch.equal(compiled, eager) else 0)  # 1 while compile changes the values
