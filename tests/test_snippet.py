"""Snippet-style detection is static: it never runs the file."""

import pytest

from engine.snippet import SnippetError, SnippetStyle, detect_style


def test_fn_and_inputs():
    assert detect_style("import torch\ndef fn(x): return x\ninputs = (torch.ones(2),)") is SnippetStyle.FN_INPUTS


def test_kernelbench():
    assert detect_style("class Model: pass\ndef get_inputs(): return []") is SnippetStyle.KERNELBENCH


def test_repro_calling_torch_compile():
    assert detect_style("import torch\nf = torch.compile(lambda x: x)\nf(torch.ones(1))") is SnippetStyle.REPRO


def test_repro_using_decorator_and_module_compile():
    assert detect_style("import torch\n@torch.compile\ndef f(x): return x") is SnippetStyle.REPRO
    assert detect_style("m = make()\nm.compile()\nm(1)") is SnippetStyle.REPRO


def test_re_compile_is_not_torch_compile():
    with pytest.raises(SnippetError, match="fits no snippet style"):
        detect_style("import re\nr = re.compile('x')")


def test_syntax_error_names_the_line():
    with pytest.raises(SnippetError, match=r"syntax error in s.py, line 2: expected ':'"):
        detect_style("import torch\ndef fn(x)\n    return x", "s.py")


def test_missing_inputs_says_what_was_looked_for():
    with pytest.raises(SnippetError, match="defines `fn` but not `inputs`") as err:
        detect_style("def fn(x): return x")
    assert "class Model" in str(err.value) and "torch.compile" in str(err.value)
