"""Teaching: one long reduction over 2**20 elements. On CUDA Inductor splits it into two kernels (partial sums,
then a final sum); on CPU it splits it across threads and SIMD lanes. The summation order changes, but these
values are small integers, so every partial sum is exact in float32 and the result is bit-identical.
Replace randint by randn to see the order change the last bits."""
import torch


def fn(x):
    return x.sum(), x.amax(), x.mean()


def inputs():
    return (torch.randint(-8, 8, (1 << 20,)).float(),)
