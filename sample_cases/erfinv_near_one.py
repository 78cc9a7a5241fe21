"""torch.erfinv near +-1: Inductor's C++ backend emits calc_erfinv, which loses digits."""
import torch

fn = torch.erfinv


def inputs():
    # probabilities close to +-1, as when computing normal quantiles sqrt(2) * erfinv(2p - 1)
    x = torch.tensor([0.99, 0.9999, 0.999999, 0.9999999, 0.99999994, -0.99999994, 0.5, 0.9])
    return (x,)
