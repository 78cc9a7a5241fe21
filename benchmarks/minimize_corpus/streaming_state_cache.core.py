import torch


def fn(frames, state):
    state[0:, :] = frames[0:, :]
    frames.sub_(1.0)
    return frames


def inputs():
    return (torch.arange(12.0).view(3, 4), torch.zeros(3, 4))
