"""Localize ends in one conclusion on the two programs issue #35 walked through: real steps, real compiles.

The bf16 sensor encoder: the floor division `t // STEP` on its line, named by the first diverging node and the
bisector alike. The interpolate -> conv2d -> max_pool2d -> where backward case: no forward node diverges (only the
gradients do), the bisector finds that `layout_optimization=False` removes it and narrows it to a lowering of the
backward graph; the conclusion names that op and its line, the max pool fused with it, and the workaround, where it
used to advise `pattern_matcher=False` (which the case's own text says does not help).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import CheckOptions, localize_source
from engine.localization.conclusion import Stage

REPO = Path(__file__).resolve().parent.parent
SENSOR = REPO / "tests" / "snippets" / "sensor_encoder.py"
INTERPOLATE = REPO / "sample_cases" / "interpolate_conv_pool_backward.py"


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.slow
def test_the_sensor_encoder_ends_at_its_floor_division(divergence_home: Path, tmp_path: Path) -> None:
    loc = localize_source(SENSOR.read_text(), CheckOptions(timeout_s=600), directory=tmp_path / "loc")
    c = loc.conclusion
    assert c is not None and c.stage is Stage.LOWERING, loc.summary()
    assert (c.op, c.line) == ("aten.div.Tensor_mode", _line(SENSOR, "bucket = t // STEP")), c
    assert "eager gives 29.0, compiled 30.0" in c.sentence and c.next_step.startswith("Minimize")
    steps = {f.step: f.agrees for f in c.findings}
    assert steps["first diverging node"] is True and steps["bisector"] in (True, False)  # False: a second fault, said
    if steps["bisector"] is False:
        assert "Both are faults" in c.sentence or "its lowering is the cause" in c.sentence


@pytest.mark.slow
def test_the_interpolate_backward_case_ends_at_its_backward_lowering_and_workaround(
    divergence_home: Path, tmp_path: Path
) -> None:
    loc = localize_source(
        INTERPOLATE.read_text(), CheckOptions(backward=True, timeout_s=600), directory=tmp_path / "loc"
    )
    c = loc.conclusion
    assert c is not None, loc.summary()
    assert (c.stage, c.workaround) == (Stage.CONFIG, "layout_optimization=False"), c
    assert loc.bisect is not None and loc.bisect.narrowed_op, loc.bisect
    conv, pool = _line(INTERPOLATE, "F.conv2d("), _line(INTERPOLATE, "F.max_pool2d(")
    assert c.line in (conv, pool), c
    assert "F.max_pool2d(conv" in c.sentence and "only gradients differ" in c.sentence, c.sentence
    assert "`layout_optimization=False`" in c.next_step and "pattern_matcher" not in c.sentence + c.next_step
