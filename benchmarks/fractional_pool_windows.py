"""Does the float64 reference place fractional max pooling's windows where the op's definition does?

    python benchmarks/fractional_pool_windows.py --dtype bf16 --max-size 10

A window of `fractional_max_pool2d/3d` starts at floor((i + u) a) - floor(u a), a = (n_in - k) / (n_out - 1), with u
the sample the op draws per channel in the input's dtype. The check's float64 reference runs eager's kernel in
double arithmetic (`static_cast<int>((i + u) * alpha)`); this compares that, for every sample of the dtype in
[0, 1) and every size up to --max-size, with the definition in exact arithmetic. A double product farther than 1e-6
from an integer truncates as the exact one floors; the rest are checked with fractions. docs/oracle.md#draws uses
the figures (sizes up to 10: bf16 8,046,720 window starts, fp16 7,603,200; double == exact everywhere).
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def samples(dtype: torch.dtype) -> torch.Tensor:
    """Every value of a 16-bit float dtype in [0, 1), as float64."""
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    return every[(every >= 0) & (every < 1)].double().unique()


def compare(u: torch.Tensor, n_in: int, n_out: int, k: int) -> tuple[int, int, int]:
    """(window starts compared, of them near an integer, of them where double != exact) for one size."""
    top, bottom = n_in - k, n_out - 1
    alpha = float(top) / float(bottom)
    i = torch.arange(n_out - 1, dtype=torch.float64)[:, None]
    t, b = (i + u[None, :]) * alpha, u * alpha
    double = torch.trunc(t) - torch.trunc(b)[None, :]
    near = ((t - t.round()).abs() < 1e-6) | ((b - b.round()).abs() < 1e-6)[None, :]
    wrong = 0
    for row, col in near.nonzero().tolist():
        exact_u = Fraction(float(u[col]))
        exact = math.floor((row + exact_u) * top / bottom) - math.floor(exact_u * top / bottom)
        wrong += exact != int(double[row, col])
    return t.numel(), int(near.sum()), wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--max-size", type=int, default=10, help="largest input size of a dimension")
    args = parser.parse_args()
    u = samples(DTYPES[args.dtype])
    compared = near = wrong = 0
    for n_in in range(2, args.max_size + 1):
        for n_out in range(2, n_in + 1):
            for k in range(1, n_in - n_out + 2):
                c, n, w = compare(u, n_in, n_out, k)
                compared, near, wrong = compared + c, near + n, wrong + w
    print(
        f"{args.dtype}: {u.numel()} samples in [0, 1), sizes up to {args.max_size}: {compared} window starts, "
        f"{near} near an integer (checked with fractions), double != exact: {wrong}"
    )


if __name__ == "__main__":
    main()
