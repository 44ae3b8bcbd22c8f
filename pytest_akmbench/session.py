"""The controller side of a bench run: gather samples from reports, write the report at the end.

Registered only on the controller (never on xdist workers), so nothing is written twice.
Samples arrive through ``pytest_runtest_logreport`` as plain dicts, the same path with and
without ``-n``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import report, resume

if TYPE_CHECKING:
    from .plugin import BenchState


class BenchSession:
    """Collects samples; writes report.json and summary.md at session end."""

    def __init__(self, state: BenchState) -> None:
        self.state = state
        self.samples: dict[str, dict[str, Any]] = {}
        self.cells: set[tuple[str, str, int]] = set()
        self.paths: tuple[Path, Path] | None = None
        self.envelope: dict[str, Any] | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from .nodes import CELL_KEY

        if session.config.option.collectonly:
            return
        for item in session.items:
            if CELL_KEY in item.stash:
                cell = item.stash[CELL_KEY]
                self.cells.add((cell.task.id, cell.arm, cell.seed))

    def add_node_ids(self, ids: list[str]) -> None:
        """Record the cells behind node ids like ``corpus/t/a/task.yaml::akm-s2``."""
        root = self.state.settings.rootdir
        for nodeid in ids:
            path, _, name = nodeid.partition("::")
            task = self.state.selected.get((root / path).resolve())
            arm, _, seed = name.rpartition("-s")
            if task is not None and seed.isdigit():
                self.cells.add((task.id, arm, int(seed)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        sample = getattr(report, "akmbench_sample", None)
        if sample is not None and report.when == "teardown":
            self.samples[report.nodeid] = sample

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.cells and not self.samples:
            return
        state = self.state
        done = {(s["task_id"], s["arm"], s["seed"]) for s in self.samples.values()}
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or not self.cells <= done
        # The report covers what was selected (after -k/-m), read back from the store so a
        # resumed run reports every sample it has, not only this session's.
        inp = resume.report_input(
            tasks=state.tasks, arms=state.settings.arms, seeds=state.settings.seeds, cells=self.cells,
            slice_label=state.slice, ctx=state.context(), store_dir=state.store_dir, floor=state.settings.floor,
            extra_samples=self.samples.values(), complete=False if interrupted else None,
            warnings=state.warnings, cwd=state.settings.rootdir, baseline=state.baseline,
            gates=state.settings.gates,
        )
        self.envelope = report.build(inp)
        self.paths = report.write(state.report_dir, self.envelope)
        if self.envelope.get("gates") and exitstatus != pytest.ExitCode.INTERRUPTED:
            # With gates, they decide: green when all hold and the harness never failed.
            harness_errors = any(r["outcome"] == "harness_error" for r in self.envelope["runs"])
            ok = all(g["ok"] for g in self.envelope["gates"]) and not harness_errors
            session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.paths is None or self.envelope is None:
            return
        tr = terminalreporter
        tr.write_sep("-", "akmbench")
        if self.envelope.get("verdict"):
            tr.write_line(self.envelope["verdict"])
        for arm in self.envelope["corpus"]["arms"]:
            agg = self.envelope["aggregate"].get(arm)
            if agg is None:
                tr.write_line(f"{arm}: not run")
                continue
            rate = "n/a" if agg["pass_rate"] is None else f"{agg['pass_rate']:.2f}"
            tr.write_line(
                f"{arm}: pass_rate {rate} over {agg['tasks']} tasks, {agg['runs']} runs"
                f" ({agg['harness_error_count']} harness errors, {agg['budget_exceeded_count']} over budget)"
            )
        delta = self.envelope["aggregate"].get("delta")
        if delta and delta["pass_rate"] is not None:
            tr.write_line(f"delta (akm - noakm): {delta['pass_rate']:+.2f}")
        if not self.envelope["complete"]:
            tr.write_line("report is INCOMPLETE: not every selected cell ran")
        for gate in self.envelope.get("gates") or []:
            tr.write_line(f"gate {'held' if gate['ok'] else 'FAILED'}: {gate['gate']}: {gate['message']}")
        tr.write_line(f"report: {self.paths[0]}")
        tr.write_line(f"summary: {self.paths[1]}")
