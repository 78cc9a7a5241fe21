"""With efficient_conv_bn_eval_fx_passes=True (the "Efficient ConvBN" rewrite for training with a frozen BatchNorm),
a grouped ConvTranspose followed by its BatchNorm no longer compiles: the pass reshapes the BN coefficient to
[1, C_out, 1, 1] against a transposed weight of shape [C_in, C_out / groups, k, k] and the multiply cannot
broadcast. Eager runs; compile raises (CPU, fp32)."""

import sys

import torch
import torch._inductor.config as config
from torch import nn

config.efficient_conv_bn_eval_fx_passes = True
torch.manual_seed(0)
model = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, groups=2), nn.BatchNorm2d(6))
model.train()
model[1].eval()  # the pass's use case: fine-tuning with frozen BatchNorm statistics
x = torch.randn(2, 4, 5, 5)
print("eager output:", tuple(model(x).shape))
try:
    print("compiled output:", tuple(torch.compile(model)(x).shape))
    failed = False
except Exception as exc:  # BackendCompilerFailed from the pass's reshape
    reason = next((line for line in str(exc).splitlines() if "broadcast" in line), str(exc).splitlines()[0])
    print("compiled raises:", type(exc).__name__, reason.strip()[:200])
    failed = True
sys.exit(1 if failed else 0)
