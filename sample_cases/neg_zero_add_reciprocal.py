# Upstream repro of pytorch/pytorch#189799 (style 3: the script calls torch.compile itself).
import torch
import torch.nn as nn


class BugModule(nn.Module):
    def forward(self, x):
        v = torch.ceil(x)  # ceil(-0.5) = -0.0
        v = torch.add(v, torch.zeros_like(v))  # -0.0 + 0.0 = +0.0 in IEEE 754
        v = torch.reciprocal(v)  # reciprocal(+0.0) = +inf, reciprocal(-0.0) = -inf
        return v


x = torch.tensor([-0.5, -0.1, -0.9], dtype=torch.float32)

with torch.no_grad():
    eager_out = BugModule()(x)
    ind_out = torch.compile(BugModule())(x)
