"""The whole markdown ``compare`` prints (and two of its JSON results) (report/compare/markdown.py), byte for byte, for a set of
report pairs: a reader's diff view must not change without a deliberate update of these files.
Regenerate them after such a change with ``python -m tests.core.test_compare_golden`` and read
the diff."""

from __future__ import annotations

import copy
import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.report.compare.changes import compare
from pytest_akmbench.report.compare.markdown import render_markdown
from tests.core.test_compare import envelope
from tests.core.test_compare_workflow import specs, wf_envelope

DATA = Path(__file__).with_name("data") / "compare"


def _without(report: dict[str, Any], task: str) -> dict[str, Any]:
    out = copy.deepcopy(report)
    out["tasks"] = [t for t in out["tasks"] if t["id"] != task]
    out["corpus"]["selectedTaskIds"] = [i for i in out["corpus"]["selectedTaskIds"] if i != task]
    return out


@functools.cache  # built once: every case asks for all of them
def cases() -> dict[str, str]:
    base = envelope([3, 3, 0, 1, 2, 3], [0, 1, 0, 1, 2, 0])
    head = envelope([0, 0, 0, 1, 3, 3], [3, 3, 0, 1, 2, 0])
    good, bad = envelope([3] * 10, [0] * 10), envelope([0] * 10, [0] * 10)
    other_model = copy.deepcopy(head)
    other_model["agent"]["model"] = "x/other"
    fewer = _without(bad, "d/t09")
    fewer["corpus"]["taskCorpusHash"] = "another"
    only_akm = envelope([3, 0, 2])
    return {
        "within_noise.json": json.dumps(compare(base, head), indent=1, sort_keys=True) + "\n",
        "regression.json": json.dumps(compare(good, bad), indent=1, sort_keys=True) + "\n",
        "within_noise": render_markdown(compare(base, head)),
        "regression": render_markdown(compare(good, bad)),
        "improvement_with_warnings": render_markdown(compare(bad, good, allow_model_mismatch=True)),
        "model_refused": render_markdown(compare(base, other_model)),
        "model_allowed": render_markdown(compare(base, other_model, allow_model_mismatch=True)),
        "corpus_refused": render_markdown(compare(good, fewer)),
        "corpus_allowed": render_markdown(compare(good, fewer, allow_corpus_mismatch=True)),
        "one_arm": render_markdown(compare(only_akm, envelope([0, 3, 2]))),
        "workflows": _workflows(),
    }


def _workflows() -> str:
    """Two workflows in both reports, one in each alone, on eight tasks."""
    with tempfile.TemporaryDirectory() as tmp:
        both = specs(Path(tmp), "lookup", "feedback")
        before = {"lookup": [1, 0, 1, 0, 0, 1, 0, 0], "feedback": [2, 3, 2, 2, 1, 3, 2, 2], "old": [1] * 8}
        after = {"lookup": [4, 4, 3, 4, 3, 4, 4, 3], "feedback": [2, 2, 3, 2, 2, 3, 1, 2], "new": [4] * 8}
        base = wf_envelope({**both, **specs(Path(tmp), "old")}, before)
        head = wf_envelope({**both, **specs(Path(tmp), "new")}, after)
        return render_markdown(compare(base, head))


@pytest.mark.parametrize("name", sorted(cases()))
def test_the_markdown_is_the_one_on_file(name: str) -> None:
    assert cases()[name] == (DATA / _file(name)).read_text(encoding="utf-8")


def _file(name: str) -> str:
    return name if name.endswith(".json") else f"{name}.md"


if __name__ == "__main__":
    DATA.mkdir(parents=True, exist_ok=True)
    for name, text in cases().items():
        (DATA / _file(name)).write_text(text, encoding="utf-8")
