"""Inductor's attention fusion (fuse_attention's SDPA patterns) rewrites a hand-written softmax attention into
scaled_dot_product_attention, whose _safe_softmax returns 0 for a fully masked row. The program's own softmax
gives NaN there (exp(-inf - -inf)), so compile changes a NaN row into zeros: a user's NaN guard downstream
stops firing. Eager NaN, compiled 0.0, for every fully masked query row (CPU, fp32 and bf16)."""

import math
import sys

import torch


def attention(q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    return torch.matmul((scores + mask).softmax(dim=-1), v)


torch.manual_seed(0)
q, k, v = (torch.randn(2, 4, 16, 32) for _ in range(3))
mask = torch.zeros(2, 1, 16, 16)
mask[:, :, 3, :] = float("-inf")  # query row 3 may attend to no key
with torch.no_grad():
    eager = attention(q, k, v, mask)
    compiled = torch.compile(attention)(q, k, v, mask)
print("row 3, eager   :", eager[0, 0, 3, :4].tolist())
print("row 3, compiled:", compiled[0, 0, 3, :4].tolist())
sys.exit(1 if eager[:, :, 3].isnan().all() and not compiled[:, :, 3].isnan().any() else 0)
