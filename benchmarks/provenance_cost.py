"""What Inductor's provenance tracking costs a compile, and what the program-keyed cache costs an edit.

For a transformer block (config object, attention, LayerNorm, MLP, residuals, eval-mode dropout, a dead
helper) and two sample cases, each configuration compiles the program's first call in a fresh process,
inside the engine's own capture (engine/child/capture.py), with provenance off and on:

- cold: an empty Inductor cache of its own;
- hit: the same program again (a new process, the same cache);
- moved: a comment added on top (same graph, every line one lower): a cache hit without provenance, a
  re-lowering with it (the cache is keyed on the program's text; the kernels' binaries stay cached).

Printed: CPU seconds of the process and its compiler children (what the compile costs; unlike wall time
it hardly moves when other work shares the machine) and wall seconds; whether every kernel's program
lines match the moved program's text; whether the kernels are the same with and without provenance.

    python benchmarks/provenance_cost.py [FILE ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BLOCK = """import dataclasses
import torch
import torch.nn as nn


@dataclasses.dataclass
class Config:
    width: int = 128
    heads: int = 4
    hidden: int = 512
    dropout: float = 0.1


def unused_helper(x):
    return x.flip(0)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.out = nn.Linear(cfg.width, cfg.width)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / (c // self.heads) ** 0.5
        attn = self.drop(scores.softmax(dim=-1))
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.width)
        self.attn = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg.width)
        self.mlp = nn.Sequential(nn.Linear(cfg.width, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, cfg.width))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


fn = Block(Config()).eval()


def inputs():
    return (torch.randn(4, 64, 128),)
"""

DEFAULT = ["sample_cases/layernorm_gelu_kernelbench.py", "sample_cases/teach_fusion_pointwise.py"]

# one compile in a fresh process, inside the engine's capture; prints its figures as JSON
_ONE = r"""
import json, re, resource, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from engine.child.capture import capture_generated_code
from engine.snippet import SnippetStyle, detect_style, execute, program_from_namespace
source, on = open(sys.argv[2]).read(), sys.argv[3] == "on"
ns = execute(source, "snippet.py", as_main=False)
program = program_from_namespace(ns, detect_style(source, "snippet.py"))
args = program.make_inputs()
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
wall, used = time.perf_counter(), cpu()
with capture_generated_code(None, *(("snippet.py", source) if on else (None, None))) as captured, torch.no_grad():
    torch.compile(program.fn)(*args)
    code = captured.result()
wall, used = time.perf_counter() - wall, cpu() - used
lines = source.splitlines()
origins = [k for o in code.output_code if o.provenance is not None for k in o.provenance.kernels]
handle = re.compile(r"^\s*# \[Provenance debug handles\].*\n", re.M)
print(json.dumps({
    "wall": wall, "cpu": used,
    "kernels": [handle.sub("", k.source) for o in code.output_code for k in o.kernels],
    "with_lines": sum(1 for k in origins if k.lines), "origins": len(origins),
    "lines_right": all(lines[s.line - 1].strip() == s.code for k in origins for s in k.lines),
}))
"""


def one(source: str, on: bool, cache: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _ONE, str(REPO), f.name, "on" if on else "off"],
            env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache},
            capture_output=True,
            text=True,
            cwd=REPO,
        )
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise SystemExit(f"the compile failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    programs = [("transformer block", BLOCK)] + [
        (Path(f).stem, (REPO / f).read_text()) for f in (sys.argv[1:] or DEFAULT)
    ]
    print("CPU seconds (process + compiler children) / wall seconds of the first compiled call")
    print(f"{'program':28} {'provenance':>10} {'cold':>12} {'hit':>12} {'comment added':>14}  kernels  lines mapped")
    for name, source in programs:
        edited = "# an added comment moves every line down by one\n" + source
        kernels = {}
        for on in (False, True):
            with tempfile.TemporaryDirectory() as cache:
                cold, hit, moved = one(source, on, cache), one(source, on, cache), one(edited, on, cache)
            kernels[on] = cold["kernels"]
            mapped = ""
            if on:
                mapped = f"{moved['with_lines']}/{moved['origins']} kernels have lines, " + (
                    "each on its moved line" if moved["lines_right"] else "STALE LINES"
                )
            cells = " ".join(f"{r['cpu']:5.1f} /{r['wall']:5.1f}" for r in (cold, hit, moved))
            print(f"{name:28} {'on' if on else 'off':>10} {cells}  {len(cold['kernels']):7}  {mapped}")
        print(f"{'':28} same kernels with and without provenance: {'yes' if kernels[True] == kernels[False] else 'NO'}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]  # figures appear as they are measured
    main()
