import torch
import torch.nn.functional as F


def fn(x, grid):
    return F.grid_sample(x, grid, padding_mode="zeros", align_corners=False)


x = torch.tensor([[[[-1.0, -2.0], [-3.0, -4.0]]]])
grid = torch.tensor([[[[1.5, 1.5], [-1.5, 0.0], [0.5, 0.5]]]])
eager = fn(x, grid)
compiled = torch.compile(fn)(x, grid)
print("eager   ", eager.tolist())
print("compiled", compiled.tolist())
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if not torch.equal(compiled.signbit(), eager.signbit()) else 0)
