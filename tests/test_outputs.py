"""A model's outputs that matter come first (issue #35): value outputs lead, layout-only differences are said as
such, trivia fold away, and the user says which outputs matter (kept with the run, and in the Python API).

The rules on leaves of the shape a check writes (fast), then a real 2-layer GPT-2 in bf16 with its cache through
the app (AppTest, slow): the page leads with the logits, not the KV cache's strides.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import CheckOptions, LeafKind, LeafResult, OptionsError, Symptom, Verdict, records
from engine import outputs as roles


def _leaf(name: str, verdict: Verdict, shape=(2, 3), dtype="bfloat16", symptoms=(), values=None, numel=6) -> LeafResult:
    return LeafResult(
        name,
        LeafKind.OUTPUT,
        verdict,
        "",
        tuple(symptoms),
        shape=shape,
        dtype=dtype,
        numel=numel,
        values_verdict=values,
    )


GPT2_LIKE = (
    _leaf("out.loss", Verdict.MATCH, shape=None, dtype=None, numel=0),
    _leaf("out.logits", Verdict.PRECISION_CAST, symptoms=(Symptom.VALUE,)),
    _leaf(
        "out.cache.layers[0].keys", Verdict.DIVERGENT, symptoms=(Symptom.STRIDE, Symptom.VALUE), values=Verdict.BENIGN
    ),
    _leaf("out.cache.layers[0].is_initialized", Verdict.MATCH, shape=(), dtype="bool", numel=1),
    _leaf("out.cache.layers[0].device", Verdict.MATCH, shape=None, dtype=None, numel=0),
    _leaf("out.cache.layers[1].values", Verdict.DIVERGENT, symptoms=(Symptom.STRIDE,), values=Verdict.MATCH),
)


def test_values_lead_layout_only_follows_and_trivia_fold() -> None:
    order = [leaf.name for leaf in roles.ordered(GPT2_LIKE)]
    assert order[0] == "out.logits" and order[1:3] == ["out.cache.layers[0].keys", "out.cache.layers[1].values"]
    assert [roles.role(leaf) for leaf in roles.ordered(GPT2_LIKE)][3:] == [roles.Role.TRIVIA] * 3
    assert roles.first_to_show(GPT2_LIKE).name == "out.logits"  # not the most severe leaf, a cache tensor
    lead, layout = roles.summary(GPT2_LIKE)
    assert lead == "Value outputs: `out.logits` precision-cast"
    assert layout.startswith("Layout only: 2 tensor(s)") and "their values benign or match" in layout


def test_the_outputs_that_matter_lead_and_are_kept_with_the_run(tmp_path: Path) -> None:
    focus = ("out.cache",)  # a prefix names every cache leaf
    assert [leaf.name for leaf in roles.ordered(GPT2_LIKE, focus)][:2] == [
        "out.cache.layers[0].keys",
        "out.cache.layers[0].is_initialized",
    ]
    assert roles.first_to_show(GPT2_LIKE, focus).name == "out.cache.layers[0].keys"
    assert roles.summary(GPT2_LIKE, ("out.logits",))[0] == "Outputs you marked: `out.logits` precision-cast"
    options = CheckOptions(focus=["out.logits"])  # the Python API; stored with the run as its options are
    assert records.from_json(CheckOptions, records.to_json(options)).focus == ("out.logits",)
    with pytest.raises(OptionsError, match="focus must be leaf names"):
        CheckOptions(focus="out.logits")  # a string is not a list of names


def test_the_terminal_report_leads_with_the_value_outputs() -> None:
    from app.cli.report import render
    from engine import CheckResult

    result = CheckResult(Verdict.DIVERGENT, "divergent: ...", CheckOptions(focus=("out.logits",)), leaves=GPT2_LIKE)
    text = render(result)
    assert "\n  Outputs you marked: out.logits precision-cast.\n" in text
    table = [line.split()[0] for line in text.splitlines() if line.startswith("out.")]
    assert table[0] == "out.logits" and table[-1] == "out.cache.layers[0].device", table


pytest.importorskip("streamlit")
pytest.importorskip("transformers")

from tests.apptest_helpers import check_in_app  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
GPT2_BF16 = """import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=128, vocab_size=1000, eos_token_id=2, bos_token_id=1)
fn = GPT2LMHeadModel(config).eval().to(torch.bfloat16)


def inputs():
    return (torch.randint(0, 1000, (2, 16)),)
"""


@pytest.mark.slow
def test_gpt2_page_leads_with_its_logits_and_keeps_the_users_choice(
    divergence_home: Path, inductor_cache: Path
) -> None:
    from streamlit.testing.v1 import AppTest

    from app.store import RunStore

    at, run_id = check_in_app(APP, GPT2_BF16, 600)
    again = AppTest.from_file(APP, default_timeout=120)
    again.query_params["run"] = run_id
    again.run()
    banner = next(e.value for e in again.error if "Verdict: DIVERGENT" in e.value)
    # the layout-only divergence said as such first, then the value outputs' verdicts: not the cache's strides alone
    assert "compile changed only the memory layout of 4 tensor(s)" in banner and "values benign" in banner, banner
    assert "value outputs: `out.logits` precision-cast" in banner, banner
    table = next(d.value for d in again.dataframe if "leaf" in d.value.columns)
    assert list(table["leaf"])[0] == "out.logits" and list(table.columns)[:3] == ["leaf", "verdict", "mismatched"]
    assert "layout only (values benign)" in list(table["verdict"])
    assert not any("device" in name or "is_initialized" in name for name in table["leaf"])  # folded below
    assert any("other value(s) that match" in e.label for e in again.expander)
    assert again.selectbox(key=f"leaf:{run_id}").value == "out.logits"

    # the user says the cache matters: kept in the run's directory, the page leads with it from then on
    again.multiselect(key=f"focus:{run_id}").set_value(["out.cache.layers[1].values"]).run()
    record = RunStore().get(run_id)
    assert record is not None and (Path(record.run_dir) / roles.FOCUS_FILE).exists()
    reopened = AppTest.from_file(APP, default_timeout=120)
    reopened.query_params["run"] = run_id
    reopened.run()
    banner = next(e.value for e in reopened.error if "Verdict: DIVERGENT" in e.value)
    assert "outputs you marked: `out.cache.layers[1].values` layout only (values benign)" in banner, banner
    assert reopened.selectbox(key=f"leaf:{run_id}").value == "out.cache.layers[1].values"
