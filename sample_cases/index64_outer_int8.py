"""An int8 outer product with 2**31 + 2**16 elements: the generated kernel must index past the 32-bit range."""
import torch

N0, N1 = 2**16, 2**15 + 1  # 2,147,549,184 elements: 2 GiB of int8, past int32's 2,147,483,647


def fn(a, b):
    return a.view(-1, 1) * b.view(1, -1)  # int8 products wrap around, in eager and compiled alike


def inputs():
    return torch.randint(-128, 128, (N0,), dtype=torch.int8), torch.randint(-128, 128, (N1,), dtype=torch.int8)
