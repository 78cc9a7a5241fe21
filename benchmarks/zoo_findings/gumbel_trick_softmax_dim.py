"""Inductor's pre-grad pass apply_gumbel_max_trick (on by default) rewrites the sampling idiom
`argmax(softmax(x) / q.exponential_(), dim=-1, keepdim=True)` into `argmax(x - log(q), dim=-1)`, but it never checks
that the softmax normalizes over the argmax's dimension. With softmax over dim 0 the rewrite is not equivalent:
under fallback_random=True (so eager and compiled draw the same q) a fifth to a third of the samples change (CPU)."""

import sys

import torch
import torch._inductor.config as config
import torch.nn.functional as F

config.fallback_random = True  # compiled draws eager's random numbers: any difference is the rewrite's


def sample(logits):
    probs = F.softmax(logits, dim=0)  # normalized over the batch, not over the argmax's last dimension
    q = torch.empty_like(logits).exponential_(1.0)
    return torch.argmax(probs / q, dim=-1, keepdim=True)


torch.manual_seed(0)
logits = torch.randn(64, 8) * torch.linspace(0.1, 4, 64).unsqueeze(1)
torch.manual_seed(1)
eager = sample(logits)
compiled_fn = torch.compile(sample)
torch.manual_seed(1)
compiled = compiled_fn(logits)
differ = int((eager != compiled).sum())
print("eager   :", eager[:12, 0].tolist())
print("compiled:", compiled[:12, 0].tolist())
print(f"{differ} of {eager.numel()} samples differ with the same random draws")
sys.exit(1 if differ else 0)
