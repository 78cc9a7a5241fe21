"""With freezing=True, Inductor's binary folding moves a division of a convolution's output by a constant into the
convolution's weights (w / d). Where d is 0 for a channel, eager gives +-inf for that channel (x / 0) and the
folded weights are +-inf, so the convolution sums inf - inf: NaN for the whole channel (CPU, fp32)."""

import sys

import torch
import torch._inductor.config as config


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.register_buffer("d", torch.tensor([0.0, 1.0, -2.0, 0.5]).view(4, 1, 1))  # channel 0 divides by 0

    def forward(self, x):
        return self.conv(x) / self.d


torch.manual_seed(0)
model, x = Scaled().eval(), torch.randn(2, 3, 7, 7)
config.freezing = True
with torch.no_grad():
    eager = model(x)
    compiled = torch.compile(model)(x)
print("channel 0, eager   :", eager[0, 0, 0, :4].tolist())
print("channel 0, compiled:", compiled[0, 0, 0, :4].tolist())
sys.exit(1 if compiled[:, 0].isnan().all() and not eager[:, 0].isnan().any() else 0)
