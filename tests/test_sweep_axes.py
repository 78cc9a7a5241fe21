"""The axes a zoo sweep varies beyond PyTorch's own inductor test: op_db's reference and non-contiguous inputs,
inputs re-derived (special values, channels-last), Inductor config presets users turn on."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import torch

from app.sweep.matrix import MatrixError, cells, parse_axis
from app.sweep.orchestrator import SweepConfig, run_sweep
from app.sweep.presets import PRESETS
from app.sweep.progress import SweepProgress
from app.sweep.sources.base import ZooError
from app.sweep.sources.registry import parse
from engine.child.derive import NotApplicable, derive

pytest.importorskip("expecttest")


def _programs(pattern: str):
    found, selection = parse(pattern)
    return found.programs(selection)


def test_configs_and_derive_are_axes_whose_values_reach_the_check_options() -> None:
    configs = parse_axis("configs=default,freezing,no_simd")
    derived = parse_axis("derive=none,channels_last,special")
    combos = cells((configs, derived))
    assert len(combos) == 9
    by_label = {c.label: c.apply({"inductor_config": {"fallback_random": True}}) for c in combos}
    frozen = by_label["configs=freezing derive=channels_last"]
    assert frozen.inductor_config == {"fallback_random": True, "freezing": True}
    assert frozen.derive_inputs == "channels_last"
    assert by_label["configs=no_simd derive=none"].inductor_config == {"fallback_random": True, "cpp.simdlen": 1}
    assert by_label["configs=default derive=special"].inductor_config == {"fallback_random": True}
    assert {p.name for p in PRESETS} >= {"freezing", "cpp_wrapper", "max_autotune", "coordinate_descent"}
    with pytest.raises(MatrixError, match="expected one of default, freezing"):
        parse_axis("configs=freezng")
    with pytest.raises(MatrixError, match="channels_last"):
        parse_axis("derive=channel_last")


def test_channels_last_derivation_changes_strides_not_values() -> None:
    x, bias = torch.randn(2, 3, 4, 5), torch.randn(3)
    y, same_bias = derive("channels_last", (x, bias), seed=0)
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    assert torch.equal(x, y) and same_bias is bias
    (z,) = derive("channels_last", (torch.randn(1, 2, 3, 4, 5),), seed=0)
    assert z.is_contiguous(memory_format=torch.channels_last_3d)
    with pytest.raises(NotApplicable, match="4-d or 5-d"):
        derive("channels_last", (torch.randn(4, 4), torch.randn(2, 1, 3, 3)[:, :1]), seed=0)


def test_opinfo_flavours_give_reference_and_noncontiguous_inputs(tmp_path: Path) -> None:
    (ref,) = _programs("opinfo:fp32+ref:sinc")
    (plain,) = _programs("opinfo:fp32:sinc")
    (noncontig,) = _programs("opinfo:fp32+noncontig:sinc")
    ns = {}
    for name, program in (("ref", ref), ("plain", plain), ("noncontig", noncontig)):
        path = tmp_path / f"{name}.py"
        path.write_text(program.source)
        ns[name] = runpy.run_path(str(path))["inputs"]()[0]
    # op_db's reference inputs hold the samples and more: extremal values among them
    assert len(ns["ref"]) > len(ns["plain"])
    values = torch.cat([args[0].flatten() for args, _ in ns["ref"].values()])
    assert values.isnan().any() and values.isinf().any()
    tensors = [args[0] for args, _ in ns["noncontig"].values() if args[0].numel() > 1]
    assert tensors and not any(t.is_contiguous() for t in tensors)
    assert "reference inputs" in ref.source and "non-contiguous" in noncontig.source
    # +ref lists only the ops with reference inputs of their own: the others' would repeat the plain sweep
    with pytest.raises(ZooError, match="unknown op_db op"):
        _programs("opinfo:fp32+ref:nn.functional.dropout")
    with pytest.raises(ZooError, match="takes bf16"):
        parse("opinfo:fp32+grad")


@pytest.mark.slow
def test_a_sweep_under_a_preset_compiles_with_its_entries(tmp_path: Path) -> None:
    """A real sweep: the no_simd preset reaches Inductor, whose C++ kernel then has no vector loads."""
    program = tmp_path / "relu.py"
    program.write_text(
        "import torch\n\ndef fn(x):\n    return torch.relu(x) * 2\n\ndef inputs():\n    return (torch.randn(4, 64),)\n"
    )
    summary = run_sweep(
        SweepConfig(
            paths=(str(program),),
            axes=(parse_axis("configs=default,no_simd"),),
            sweep_dir=tmp_path / "sweep",
            slots=1,
        ),
        SweepProgress(quiet=True),
    )
    codes = {}
    for row in summary.jobs:
        assert row.verdict == "match", row
        codes[row.label] = "\n".join((Path(row.run_dir) / "result.json").read_text().split("\\n"))
    assert "at::vec::Vectorized" in codes["configs=default"]
    assert "at::vec::Vectorized" not in codes["configs=no_simd"]


def test_chain_seeds_are_ranges_and_the_same_seed_draws_the_same_chains() -> None:
    from app.sweep.sources.chains import Entry, draw, parse_seeds

    assert parse_seeds(["0-3", "9", "2"]) == [0, 1, 2, 3, 9]
    assert parse_seeds([]) == list(range(100))
    for bad in ("3-1", "x", "-2"):
        with pytest.raises(ZooError, match="seeds are whole numbers"):
            parse_seeds([bad])
    catalog = [
        Entry(("layer_norm", ""), "norm-activation", 0, (5, 5), "float32", (5, 5), "float32"),
        Entry(("gelu", ""), "norm-activation", 0, (5, 5), "float32", (5, 5), "float32"),
        Entry(("sum", ""), "reduction", 3, (5, 5), "float32", (5,), "float32"),
        Entry(("amax", ""), "reduction", 1, (5,), "float32", (), "float32"),
        Entry(("index_put", ""), "index", 2, (7,), "float32", (7,), "float32"),  # no neighbour of its shape
        Entry(("argmax", ""), "reduction", 0, (5,), "float32", (), "int64"),
    ]
    chains = draw(catalog, seed=4, dtype="float32")
    assert chains == draw(catalog, seed=4, dtype="float32") and chains != draw(catalog, seed=5, dtype="float32")
    assert len(chains) == 8
    for chain in chains:
        assert 2 <= len(chain) <= 4
        for a, b in zip(chain, chain[1:], strict=False):
            assert (a.shape_out, a.dtype_out) == (b.shape_in, b.dtype_in) and a.op != b.op
        assert ("index_put", "") not in [e.op for e in chain]


def test_an_op_that_hashes_its_inputs_bits_only_starts_a_chain() -> None:
    # after another op, one step of reassociation upstream would make the hash a wholly other integer
    from app.sweep.sources.chains import Entry, draw

    catalog = [
        Entry(("sin", ""), "pointwise", 0, (5,), "float32", (5,), "float32"),
        Entry(("cos", ""), "pointwise", 0, (5,), "float32", (5,), "float32"),
        Entry(("hash_tensor", ""), "reduction", 0, (5,), "float32", (5,), "float32"),
    ]
    steps = [e.op for seed in range(20) for chain in draw(catalog, seed, "float32") for e in chain[1:]]
    assert steps and ("hash_tensor", "") not in steps


def test_a_chain_program_feeds_each_op_the_last_ones_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real catalog of a few ops (op_db run eagerly) and a program whose chains run as drawn."""
    from app.sweep.sources import chains

    monkeypatch.setenv("DIVERGENCE_HOME", str(tmp_path))
    wanted = {"sin", "add", "nn.functional.gelu", "sum", "amax", "flip", "gather", "nn.functional.layer_norm"}
    unstable = {"nn.functional.dropout", "empty_like", "randn_like", "bernoulli", "linalg.det"}
    small = chains.build_catalog("float32", samples_per_op=6, names=wanted | unstable)
    assert {e.family for e in small} == {"pointwise", "norm-activation", "reduction", "layout", "index"}
    assert {e.op[0] for e in small} == wanted  # random, uninitialized and family-less ops left out
    monkeypatch.setattr(chains, "catalog", lambda dtype_name: small)
    (program,) = _programs("chain:fp32:7")
    path = tmp_path / "seed7.py"
    path.write_text(program.source)
    ns = runpy.run_path(str(path))
    (given,) = ns["inputs"]()
    out = ns["fn"](given)
    assert list(out) == [f"sample[{i}]" for i in range(len(program.info["chains"]))]
    for name, (x, steps) in given.items():
        for op, args, kwargs in steps:
            x = ns["OPS"][op].op(x, *args, **kwargs)
        assert torch.equal(out[name], x)
    # one chain alone, as the sweep runs it when the whole program ends in an error
    part = program.parts()[2]
    assert "SAMPLES = [2]" in part.source and part.info["sample"] == 2
