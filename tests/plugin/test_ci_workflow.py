"""The GitHub Actions workflow of docs/ci.md (docs/ci/bench.yml) is valid and goes green: it
validates against the GitHub workflow JSON Schema (SchemaStore's, as vendored by check-jsonschema:
offline), its matrix and shard count agree, its artifacts connect the jobs, the shard command
lists cells, the merge command parses with the report command's parser, and its jobs run here as
written (installing the tools, the shards on real opencode and real akm, the merge with its gate),
their annotations each at the start of a line."""

from __future__ import annotations

import importlib.resources
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from pytest_akmbench.cli.main import build_parser
from pytest_akmbench.report import gates
from tests.support.procs import processes_under

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


# ------------------------------------------------------------------ the workflow, run here


# The run lines the runner below leaves out: they install into the machine's Python and apt, which
# the test's own install stands for (the package is this checkout, on PYTHONPATH; ripgrep and
# bubblewrap are set up by .ci/setup). Everything else in a run step runs as written.
MACHINE_INSTALLS = {
    'python -m pip install . "ripgrep==14.1.0"',
    "python -m pip install .",
    "sudo apt-get install -y -qq bubblewrap || true",
}
# What a `${{ inputs.x || 'default' }}` reads: a dispatch of a smaller config, no repository variables.
EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
ANNOTATION = re.compile(r"::(error|warning|notice)( [^:]*)?::(.*)")


class Runner:
    """The jobs of docs/ci/bench.yml on this machine, each in a fresh workspace: `run:` steps go to
    `bash -e` as on GitHub's runners (with the workflow's env and GITHUB_* variables), `uses:`
    steps are done by hand (checkout copies the repository's files, artifacts are directories)."""

    def __init__(self, base: Path, inputs: dict[str, str]) -> None:
        self.base, self.inputs = base, inputs
        self.artifacts = base / "artifacts"
        self.artifacts.mkdir()
        self.home = base / "home"  # a fresh runner's HOME: no providers file, no akm, no opencode
        self.home.mkdir()
        self.wf = workflow()
        self.runs = 0

    def value(self, text: str, matrix: dict[str, str]) -> str:
        def one(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("matrix."):
                return matrix[expr.removeprefix("matrix.")]
            if expr == "!cancelled()":
                return "true"
            name, _, default = expr.partition("||")
            name = name.strip()
            found = self.inputs.get(name.removeprefix("inputs.")) if name.startswith("inputs.") else None
            return found or default.strip().strip("'")

        return EXPRESSION.sub(one, text)

    def job(self, name: str, matrix: dict[str, str] | None = None) -> tuple[int, str, Path]:
        """Run job ``name`` (its steps until one fails, then those marked !cancelled()): the exit
        status of the failed step (0 when none failed), the output of its run steps, its workspace."""
        matrix = matrix or {}
        self.runs += 1
        work = self.base / f"{name}-{'-'.join(matrix.values()) or 'job'}-{self.runs}"
        work.mkdir()
        env = {k: self.value(str(v), matrix) for k, v in self.wf["env"].items()}
        env.update(
            PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
            HOME=str(self.home),
            PYTHONPATH=str(ROOT),
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(work),
            GITHUB_STEP_SUMMARY=str(work.parent / f"{work.name}.summary.md"),
            # npm's cache, where .ci/setup's install left the pinned packages: no download here.
            npm_config_cache=str(Path.home() / ".npm"),
            npm_config_prefer_offline="true",
        )
        status, out = 0, []
        for step in self.wf["jobs"][name]["steps"]:
            if status and "cancelled()" not in step.get("if", ""):
                continue
            if "uses" in step:
                self.uses(step, work, matrix)
                continue
            lines = [
                line for line in self.value(step["run"], matrix).splitlines() if line.strip() not in MACHINE_INSTALLS
            ]
            if not any(line.strip() for line in lines):
                continue
            step_env = {**env, **{k: self.value(str(v), matrix) for k, v in step.get("env", {}).items()}}
            proc = subprocess.run(
                ["bash", "-e", "-c", "\n".join(lines)],
                cwd=work,
                env=step_env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            out.append(proc.stdout + proc.stderr)
            status = status or proc.returncode
        return status, "\n".join(out), work

    def uses(self, step: dict[str, Any], work: Path, matrix: dict[str, str]) -> None:
        action = step["uses"].split("@")[0]
        args = {k: self.value(str(v), matrix) for k, v in step.get("with", {}).items()}
        if action == "actions/checkout":
            for name in ("configs", "corpus"):
                shutil.copytree(ROOT / name, work / name)
            for name in ("pyproject.toml", "conftest.py"):
                shutil.copy(ROOT / name, work / name)
            # The repository's akm bundles (AKM_BUNDLES, docs/ci.md): the ones .ci/akm installed here.
            bundles = work / "tools" / "akm"
            bundles.mkdir(parents=True)
            for js in sorted((ROOT / ".tools" / "akm").glob("*/akm.js")):
                shutil.copy(js, bundles / f"akm-{js.parent.name}.js")
            (work / "configs" / "smoke.json").write_text(json.dumps(SMOKE))
        elif action in ("actions/setup-python", "actions/setup-node"):
            pass  # this machine's Python runs the steps; npm is the system's
        elif action == "actions/upload-artifact":
            if (work / args["path"]).exists():
                shutil.copytree(work / args["path"], self.artifacts / args["name"])
        elif action == "actions/download-artifact":
            pattern = args["pattern"]
            for artifact in sorted(self.artifacts.glob(pattern)):
                shutil.copytree(artifact, work / args["path"] / artifact.name)
        else:
            raise AssertionError(f"the test does not know how to run {step['uses']}")


QUICK = json.loads((ROOT / "configs" / "quick.json").read_text())
# The shipped quick config on two of its tasks and one seed: four cells, one per shard.
SMOKE = {**QUICK, "name": "ci-smoke", "tasks": QUICK["tasks"][:2], "seeds": 1}


def annotations(output: str) -> list[tuple[str, str]]:
    """(kind, message) of every workflow command in ``output``, each required to start its line:
    GitHub ignores one that does not."""
    found = []
    for line in output.splitlines():
        if "::error" in line or "::warning" in line:
            match = ANNOTATION.match(line)
            assert match, f"an annotation not at the start of its line: {line!r}"
            found.append((match.group(1), (match.group(2) or "") + "::" + match.group(3)))
    return found


def test_the_workflow_goes_green_on_a_fresh_runner(tmp_path: Path) -> None:
    """Issue 29, item 2: on a fresh runner each shard installs opencode, bun and akm the way a user
    would and runs its cells, both arms, with that akm (it used to exit 4: no akm); the merge goes
    green with its gate, and when a shard's store never arrives it fails and says so where GitHub
    shows it. One test, so that the shards run once (a fixture would run them on each worker)."""
    from tests.support import opencode, real_akm

    opencode.binary()
    for version in ("0.7.0", "0.9.0"):
        real_akm.get(version)  # the bundles the checkout carries are made from these
    runner = Runner(tmp_path, {"config": "configs/smoke.json"})
    n = int(runner.wf["env"]["SHARDS"])
    with ThreadPoolExecutor(2) as pool:
        shards = list(pool.map(lambda k: runner.job("shard", {"shard": str(k)}), range(1, n + 1)))
    for status, out, work in shards:
        assert status == 0, out
        assert "akm 0.9.0: " in out and f"{work}/.tools/akm/0.9.0/akm" in out, out
        report = json.loads((work / "shard-report" / "report.json").read_text())
        assert report["shard"]["complete"] is True and len(report["runs"]) == 1, out
        assert report["runs"][0]["outcome"] == "pass"
        assert report["provenance"]["akm_version"] == "0.9.0"
        assert annotations(out) == []  # a shard that did its part raises nothing on the run's page
    arms = sorted(json.loads((w / "shard-report" / "report.json").read_text())["runs"][0]["arm"] for _, _, w in shards)
    assert arms == ["akm", "akm", "noakm", "noakm"]

    status, out, work = runner.job("merge")
    assert status == 0, out
    report = json.loads((work / "report" / "report.json").read_text())
    assert report["complete"] is True and report["merge"]["missing"] == []
    assert [g["ok"] for g in report["gates"]] == [True]
    assert (runner.artifacts / "report" / "report.html").is_file()  # the uploaded report
    assert "## " in (work.parent / f"{work.name}.summary.md").read_text()  # the job summary
    assert annotations(out) == []

    # A shard whose store never arrived: the merge fails, and says so where GitHub shows it.
    shutil.rmtree(runner.artifacts / "store-3")
    shutil.rmtree(runner.artifacts / "report")
    status, out, work = runner.job("merge")
    assert status == 1, out
    found = annotations(out)
    assert any(
        kind == "error" and text.startswith(" title=akmbench%3A merge incomplete::shard 3/4 missing")
        for kind, text in found
    ), found
    assert any(kind == "warning" and "report incomplete" in text for kind, text in found), found
    assert (runner.artifacts / "report" / "report.json").is_file()  # uploaded all the same
    assert processes_under(tmp_path) == []
