"""RMSNorm written by hand in float32: x * rsqrt(mean(x^2) + eps) * w, fused by Inductor."""
import torch


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


fn = RMSNorm(1024)


def inputs():
    return (torch.randn(16, 1024) * 3,)
