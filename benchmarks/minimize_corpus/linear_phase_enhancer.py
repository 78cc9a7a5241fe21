"""A speech enhancer with an adaptive FIR stage: per call, a small network predicts a few taps that are written
into the kernel buffer at their slots, and the kernel is made linear-phase (symmetric) by adding its reverse;
the filtered signal then goes through a residual conv block with BatchNorm (eval statistics)."""

import torch
from torch import nn
from torch.nn import functional as F


class Hyper:
    channels = 4
    taps = 8
    adapt_slots = (0, 3, 6)
    hidden = 16
    dropout = 0.2
    bn_momentum = 0.05

    def __repr__(self):
        return f"Hyper(channels={self.channels}, taps={self.taps})"


class TapPredictor(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(hp.channels, hp.hidden),
            nn.Tanh(),
            nn.Dropout(hp.dropout),
            nn.Linear(hp.hidden, len(hp.adapt_slots) * hp.channels),
        )
        self.slots = len(hp.adapt_slots)

    def forward(self, summary):
        return self.net(summary).view(self.slots, -1)


class AdaptiveFIR(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.register_buffer("kernel", torch.linspace(0.0, 1.0, hp.taps).unsqueeze(1).repeat(1, hp.channels))
        self.register_buffer("slots", torch.tensor(hp.adapt_slots))
        self.predict = TapPredictor(hp)

    def forward(self, signal):
        summary = signal.mean(dim=(0, 2))
        new_taps = self.predict(summary).detach()  # adapted per call, never trained through
        self.kernel[self.slots] = new_taps
        self.kernel += self.kernel.flip(0)  # linear phase: symmetric taps
        weight = self.kernel.t().unsqueeze(1)  # (channels, 1, taps): depthwise
        return F.conv1d(signal, weight, padding="same", groups=signal.shape[1])


class ResidualConvBlock(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.conv1 = nn.Conv1d(hp.channels, hp.hidden, 3, padding=1)
        self.bn1 = nn.BatchNorm1d(hp.hidden, momentum=hp.bn_momentum)
        self.conv2 = nn.Conv1d(hp.hidden, hp.channels, 3, padding=1)
        self.bn2 = nn.BatchNorm1d(hp.channels, momentum=hp.bn_momentum)
        self.drop = nn.Dropout(hp.dropout)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(self.drop(h))))


class Enhancer(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hp = hp
        self.fir = AdaptiveFIR(hp)
        self.block = ResidualConvBlock(hp)
        self.mask = nn.Conv1d(hp.channels, hp.channels, 1)

    def forward(self, noisy):
        filtered = self.fir(noisy)
        features = self.block(filtered)
        return noisy * torch.sigmoid(self.mask(features))

    def reset(self):
        self.fir.kernel.copy_(torch.linspace(0.0, 1.0, self.hp.taps).unsqueeze(1).repeat(1, self.hp.channels))


def snr_db(clean, estimate):
    noise = clean - estimate
    return 10 * torch.log10(clean.pow(2).sum() / noise.pow(2).sum())


enhancer = Enhancer(Hyper())
enhancer.eval()
fn = enhancer


def inputs():
    # one 4-channel frame of 32 samples
    return (torch.randn(1, Hyper.channels, 32),)
