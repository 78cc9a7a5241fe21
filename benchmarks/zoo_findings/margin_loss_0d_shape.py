"""`multi_margin_loss` and `multilabel_margin_loss` accept a 0-d input (one score, no class dimension); with
reduction='none' eager returns a 0-d loss, compiled a loss of shape [1]: their decompositions make the input
at least 1-d (atleast_2d / unsqueeze) and never squeeze the result back (CPU; aot_eager too)."""

import sys

import torch
import torch.nn.functional as F


def losses(x, target, labels):
    return (
        F.multi_margin_loss(x, target, reduction="none"),
        F.multilabel_margin_loss(x, labels, reduction="none"),
    )


x, target, labels = torch.tensor(0.3), torch.tensor(0), torch.tensor(0)
eager = losses(x, target, labels)
compiled = torch.compile(losses)(x, target, labels)
for name, e, c in zip(("multi_margin_loss", "multilabel_margin_loss"), eager, compiled, strict=True):
    print(f"{name:24s} eager shape {list(e.shape)}  compiled shape {list(c.shape)}")
sys.exit(1 if any(e.shape != c.shape for e, c in zip(eager, compiled, strict=True)) else 0)
