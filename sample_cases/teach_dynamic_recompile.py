# Teaching (snippet style 3): one compiled function called with three shapes.
# The first call compiles a static graph for length 8; the second call fails the size guard,
# so Dynamo recompiles with a symbolic (dynamic) length; the third call reuses that graph.
import torch


def scale_shift(x):
    return x * 2.0 + x.mean()


compiled = torch.compile(scale_shift)
for n in (8, 16, 32):
    compiled(torch.arange(n, dtype=torch.float32))
