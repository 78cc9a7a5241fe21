"""F.elu of tiny negative inputs is a negative subnormal; Inductor flushes it to +0, so x/0 is nan, not -inf."""
import torch
import torch.nn.functional as F


class BugModule(torch.nn.Module):
    def forward(self, x):
        return torch.div(F.elu(x, alpha=0.52), torch.zeros_like(x))


fn = BugModule()


def inputs():
    return (torch.tensor([-1e-8, -1e-9, -1e-10, -1e-20, -1e-30, -1e-38]),)
