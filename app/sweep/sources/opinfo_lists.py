"""PyTorch's own lists for the inductor OpInfo test on CPU: what it skips, expects to fail, runs one sample
of, and the tolerances it overrides.

Copied from test/inductor/test_torchinductor_opinfo.py of pytorch/pytorch at commit a75d35a5 (the test is
not shipped in the torch wheel, so it cannot be read from the installed torch): `inductor_skips["cpu"]`,
`inductor_expected_failures_single_sample["cpu"]`, `inductor_one_sample["cpu"]` and
`inductor_override_kwargs["cpu"]`. Keys are `name` or `name.variant`, as the test's `op_name`; dtypes are
torch's short names. The test never runs bfloat16 (`bf16 = torch.bfloat16  # not tested`; its allowed
dtypes are f16, f32, f64, i32, i64, b8, and u8 for interpolation), so no bf16 appears below: a bf16
finding is "not in PyTorch's lists" unless the op is listed for another dtype, which `entries` says.
op_db's own entries for the test (DecorateInfo on TestInductorOpInfo: skips, expected failures, tolerance
overrides) ship with torch and are read from it (app.sweep.sources.opinfo.decorations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SOURCE = "pytorch/pytorch test/inductor/test_torchinductor_opinfo.py @ a75d35a5"
TESTED_DTYPES = ("f16", "f32", "f64", "i32", "i64", "b8")

SKIPS: Mapping[str, frozenset[str]] = {
    "linalg.ldl_factor": frozenset({"f32", "f64"}),  # flaky
    "nn.functional.cosine_embedding_loss": frozenset({"b8"}),  # flaky
    "index_reduce.prod": frozenset({"f16"}),  # flaky
    "index_reduce.mean": frozenset({"f16"}),  # flaky
}

EXPECTED_FAILURES: Mapping[str, frozenset[str]] = {
    "_softmax_backward_data": frozenset({"f16"}),
    "_upsample_bilinear2d_aa": frozenset({"f32", "f64"}),
    "cholesky": frozenset({"f32", "f64"}),
    "complex": frozenset({"f16"}),
    "resize_": frozenset({"b8", "f16", "f32", "f64", "i32", "i64"}),
    "resize_as_": frozenset({"b8", "f16", "f32", "f64", "i32", "i64"}),
    "histc": frozenset({"f16"}),
    "multinomial": frozenset({"f16", "f32", "f64"}),
    "nn.functional.avg_pool1d": frozenset({"i64"}),
    "nn.functional.avg_pool2d": frozenset({"i64"}),
    "nn.functional.avg_pool3d": frozenset({"i64"}),
    "nn.functional.local_response_norm": frozenset({"i64"}),
    "nonzero_static": frozenset({"b8", "f16", "f32", "f64", "i32", "i64"}),
    "normal.in_place": frozenset({"f16", "f32", "f64"}),
    "normal.number_mean": frozenset({"f16", "f32", "f64"}),
    "normal": frozenset({"f16", "f32", "f64"}),
    "sparse.mm.reduce": frozenset({"f32", "f64", "f16"}),
    "sparse.sampled_addmm": frozenset({"f32", "f64"}),
    "to_sparse": frozenset({"f32", "f64"}),
    "view_as_complex": frozenset({"f16"}),
}

ONE_SAMPLE: Mapping[str, frozenset[str]] = {
    "_segment_reduce.lengths": frozenset({"f16"}),
    "_segment_reduce.offsets": frozenset({"f16"}),
    "addmv": frozenset({"f16"}),
    "as_strided.partial_views": frozenset({"f16"}),
    "corrcoef": frozenset({"f16"}),
    "diff": frozenset({"f16"}),
    "einsum": frozenset({"f16", "i32"}),
    "gradient": frozenset({"f16"}),
    "histogram": frozenset({"f32", "f64"}),
    "histogramdd": frozenset({"f32", "f64"}),
    "index_put": frozenset({"f16", "f32", "f64"}),
    "linalg.eig": frozenset({"f32", "f64"}),
    "linspace": frozenset({"f16", "i32", "i64"}),
    "linspace.tensor_overload": frozenset({"f16", "f32", "f64", "i32", "i64"}),
    "logspace": frozenset({"f16"}),
    "logspace.tensor_overload": frozenset({"f16", "f32", "f64", "i32", "i64"}),
    "masked_logsumexp": frozenset({"i64"}),
    "max_pool2d_with_indices_backward": frozenset({"f16", "f32", "f64"}),
    "new_empty_strided": frozenset({"f16"}),
    "nn.functional.adaptive_avg_pool3d": frozenset({"f16"}),
    "nn.functional.adaptive_max_pool1d": frozenset({"f16", "f32"}),
    "nn.functional.adaptive_max_pool2d": frozenset({"f16", "f32"}),
    "nn.functional.bilinear": frozenset({"f16"}),
    "nn.functional.conv_transpose1d": frozenset({"f16"}),
    "nn.functional.conv_transpose2d": frozenset({"f16"}),
    "nn.functional.conv_transpose3d": frozenset({"f16"}),
    "nn.functional.cosine_similarity": frozenset({"f16"}),
    "nn.functional.cross_entropy": frozenset({"f16", "f32", "f64"}),
    "nn.functional.gaussian_nll_loss": frozenset({"f16"}),
    "nn.functional.grid_sample": frozenset({"f32", "f64", "f16"}),
    "nn.functional.interpolate.area": frozenset({"f16"}),
    "nn.functional.nll_loss": frozenset({"f16", "f32", "f64"}),
    "normal": frozenset({"f16", "f32", "f64"}),
    "put": frozenset({"f16", "f32", "f64"}),
    "take": frozenset({"b8", "f16", "f32", "f64", "i32", "i64"}),
}

# (op_name, dtype or None for every dtype) -> check_model keyword arguments
OVERRIDES: Mapping[tuple[str, str | None], Mapping[str, Any]] = {
    ("empty", None): {"assert_equal": False},  # the return value of empty is undefined
    ("empty_permuted", None): {"assert_equal": False},
    ("empty_like", None): {"assert_equal": False},
    ("new_empty", None): {"assert_equal": False},
    ("empty_strided", None): {"assert_equal": False},
    ("new_empty_strided", None): {"assert_equal": False},
    ("randn", None): {"assert_equal": False},
    ("nn.functional.multilabel_soft_margin_loss", "f16"): {"atol": 3e-4, "rtol": 0.002},
    ("nn.functional.triplet_margin_with_distance_loss", "f16"): {"atol": 3e-4, "rtol": 0.003},
    ("softmax", "f16"): {"atol": 1e-4, "rtol": 0.02},
    ("polygamma.polygamma_n_0", "f32"): {"atol": 1e-3, "rtol": 1e-4},
    ("polygamma.polygamma_n_1", "f32"): {"atol": 1e-3, "rtol": 1e-4},
    ("polygamma.polygamma_n_2", "f32"): {"atol": 1e-3, "rtol": 1e-4},
    ("polygamma.polygamma_n_3", "f32"): {"atol": 1e-3, "rtol": 1e-4},
    ("polygamma.polygamma_n_4", "f32"): {"atol": 1e-3, "rtol": 1e-4},
    ("special.polygamma.special_polygamma_n_0", "f32"): {"atol": 1e-3, "rtol": 1e-4},
    ("_unsafe_masked_index_put_accumulate", "f16"): {"atol": 1e-4, "rtol": 0.01},
    ("nn.functional.interpolate.bilinear", "u8"): {"atol": 1, "rtol": 0},
    ("nn.functional.upsample_bilinear", "u8"): {"atol": 1, "rtol": 0},
    ("nn.functional.interpolate.bicubic", "u8"): {"atol": 1, "rtol": 0},
    ("nn.functional.interpolate.bicubic", "f32"): {"atol": 5e-3, "rtol": 0},  # high atol due to precision loss
}

# the test's own tolerances where no override applies (_get_tolerances): fp32 only; others assertEqual's defaults
DEFAULT_TOLERANCES: Mapping[str, tuple[float, float]] = {"f32": (1.3e-5, 1.5e-5)}  # (rtol, atol)
# assertEqual's (torch.testing's) defaults by dtype, which an op_db toleranceOverride can only raise
ASSERT_DEFAULTS: Mapping[str, tuple[float, float]] = {
    "bf16": (1.6e-2, 1e-5),
    "f16": (1e-3, 1e-5),
    "f32": (1.3e-6, 1e-5),
    "f64": (1e-7, 1e-7),
}


def tolerances(op_name: str, dtype: str) -> tuple[float | None, float | None, bool]:
    """(rtol, atol, compare values) the test would use for op_name at dtype; None: assertEqual's default."""
    rtol, atol = DEFAULT_TOLERANCES.get(dtype, (None, None))
    values = True
    for key in ((op_name, None), (op_name, dtype)):  # the test applies the op's override, then the (op, dtype) one
        override = OVERRIDES.get(key, {})
        rtol, atol = override.get("rtol", rtol), override.get("atol", atol)
        values = override.get("assert_equal", values)
    if (rtol is None) != (atol is None):  # assert_close takes both or neither; the test's pairs always come together
        raise ValueError(f"{op_name} {dtype}: an override with only one of rtol and atol")
    return rtol, atol, values


def entries(op_name: str) -> list[str]:
    """Where PyTorch's lists name this op on CPU, for any dtype, e.g. ['expected failure (f16)']."""
    found = []
    for title, table in (("skipped", SKIPS), ("expected failure", EXPECTED_FAILURES), ("one sample only", ONE_SAMPLE)):
        if op_name in table:
            found.append(f"{title} ({', '.join(sorted(table[op_name]))})")
    return found
