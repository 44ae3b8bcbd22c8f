"""The GitHub Actions workflow of docs/ci.md (docs/ci/bench.yml) is valid and runs commands that
exist: it validates against the GitHub workflow JSON Schema (SchemaStore's, as vendored by
check-jsonschema: offline), its matrix and shard count agree, its artifacts connect the jobs, the
shard command really lists cells, and the merge command parses with the report command's parser."""

from __future__ import annotations

import importlib.resources
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from pytest_akmbench.cli.main import build_parser
from pytest_akmbench.report import gates

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "ci" / "bench.yml"


def workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as true
    return data


def run_lines(job: dict[str, Any]) -> list[str]:
    """The shell lines of a job's run steps, continuation lines joined."""
    lines = []
    for step in job["steps"]:
        if "run" in step:
            lines += step["run"].replace("\\\n", " ").splitlines()
    return lines


def expand(line: str, values: dict[str, str]) -> list[str]:
    """A command line with expressions and variables replaced, split as the shell would."""
    line = re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", values["shard"], line)
    line = line.replace('"${args[@]}"', values.get("args", ""))
    for name, value in values.items():
        line = line.replace(f'"${name}"', value).replace(f"${name}", value)
    words = shlex.split(line)
    return words[: words.index("||")] if "||" in words else words


def command(lines: list[str], start: list[str]) -> str:
    (found,) = [line for line in lines if shlex.split(line.strip())[: len(start)] == start]
    return found


def test_it_validates_against_the_github_workflow_schema() -> None:
    vendored = importlib.resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "github-workflows.json"
    schema = json.loads(vendored.read_text())
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft7Validator(schema).iter_errors(workflow())
    ]
    assert errors == []
    broken = workflow()
    del broken["jobs"]["merge"]["runs-on"]
    broken["jobs"]["shard"]["steps"][0]["uses"] = 4
    assert len(list(Draft7Validator(schema).iter_errors(broken))) >= 2


def test_the_doc_shows_the_workflow_file() -> None:
    doc = (ROOT / "docs" / "ci.md").read_text()
    assert f"```yaml\n{WORKFLOW.read_text()}```" in doc


def test_matrix_shards_and_artifacts_agree() -> None:
    wf = workflow()
    shard, merge = wf["jobs"]["shard"], wf["jobs"]["merge"]
    n = int(wf["env"]["SHARDS"])
    assert shard["strategy"]["matrix"]["shard"] == list(range(1, n + 1))
    assert shard["strategy"]["fail-fast"] is False  # one failing shard must not cancel the others
    assert merge["needs"] == "shard" and "cancelled()" in merge["if"]
    run = expand(command(run_lines(shard), ["python", "-m", "pytest"]), {"shard": "1", "SHARDS": str(n)})
    assert run[run.index("--bench-shard") + 1] == f"1/{n}"
    store = run[run.index("--bench-store") + 1]
    (upload,) = [s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["path"] == store and upload["with"]["name"] == "store-${{ matrix.shard }}"
    assert "cancelled()" in upload["if"]  # a shard whose cells failed still hands its store on
    (download,) = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert download["with"]["pattern"] == "store-*"
    loop = command(run_lines(merge), ["for", "store", "in"])
    assert f"{download['with']['path']}/store-*" in loop and '--store "$store"' in loop


def test_the_shard_command_lists_the_shards_cells() -> None:
    """The shard job's pytest command, with --co: every option exists, and the four shards list
    disjoint cells that together are the whole config's."""
    wf = workflow()
    line = command(run_lines(wf["jobs"]["shard"]), ["python", "-m", "pytest"])
    config = re.search(r"'([^']+)'", wf["env"]["CONFIG"]).group(1)
    model = re.search(r"'([^']+)'", wf["env"]["BENCH_MODEL"]).group(1)
    n = wf["env"]["SHARDS"]
    listed = []
    for k in range(1, int(n) + 1):
        argv = expand(line, {"shard": str(k), "SHARDS": n, "CONFIG": config, "BENCH_MODEL": model})
        assert argv[:3] == ["python", "-m", "pytest"]
        proc = subprocess.run(
            [sys.executable, *argv[1:], "--co"], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        listed.append([x for x in proc.stdout.splitlines() if "::" in x])
    whole = subprocess.run(
        [sys.executable, "-m", "pytest", "--bench-config", config, "--co", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    cells = [x for x in whole.stdout.splitlines() if "::" in x]
    assert cells and sorted(x for part in listed for x in part) == sorted(cells)


def test_the_merge_command_parses() -> None:
    wf = workflow()
    line = command(run_lines(wf["jobs"]["merge"]), ["python", "-m", "pytest_akmbench"])
    config = re.search(r"'([^']+)'", wf["env"]["CONFIG"]).group(1)
    argv = expand(line, {"shard": "1", "CONFIG": config, "args": "--store stores/store-1 --store stores/store-2"})
    args = build_parser().parse_args(argv[3:])
    assert args.command == "report" and args.store == ["stores/store-1", "stores/store-2"]
    assert (ROOT / args.config).is_file() and args.out
    assert args.gate
    for gate in args.gate:
        gates.parse(gate)


@pytest.mark.parametrize("step", ["checkout", "setup-python", "upload-artifact", "download-artifact"])
def test_actions_are_pinned_to_a_major_version(step: str) -> None:
    uses = [s["uses"] for job in workflow()["jobs"].values() for s in job["steps"] if "uses" in s]
    assert any(u.startswith(f"actions/{step}@v") for u in uses)
    assert all(re.fullmatch(r"actions/[a-z-]+@v\d+", u) for u in uses)
