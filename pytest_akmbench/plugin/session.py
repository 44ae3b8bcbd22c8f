"""The controller side of a bench run: gather samples from reports, write the report at the end.

Registered only on the controller (never on xdist workers), so nothing is written twice.
Samples arrive through ``pytest_runtest_logreport`` as plain dicts, the same path with and
without ``-n``. Before writing, the report is checked against the run (``integrity.check``):
on a mismatch it says so in ``warnings``, is marked incomplete and the exit status is non-zero.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import BenchError
from ..records import Sample
from ..report import envelope as report
from ..report import spend
from ..report.envelope_types import Envelope
from ..report.render import files as report_files
from ..report.render import github
from ..run import resume
from ..store import integrity
from . import adaptive, caps, run_record, shard
from .attribute import providers_setup
from .nodes import CELL_KEY
from .progress import arm_totals

if TYPE_CHECKING:
    from ..corpus.tasks import Task
    from .state import BenchState


class BenchSession:
    """Collects samples; writes report.json and summary.md at session end."""

    def __init__(self, state: BenchState, config: pytest.Config) -> None:
        self.state = state
        self.config = config
        self.samples: dict[str, Sample] = {}
        self.cells: set[tuple[str, str, int]] = set()
        self.unidentified: set[str] = set()
        self.claimed: dict[str, str] = {}
        self.paths: tuple[Path, Path, Path] | None = None
        self.envelope: Envelope | None = None
        self.problems: list[str] = []
        self.error: str | None = None
        self.late_interrupt = False
        self.annotations: list[str] = []
        self._by_suffix: dict[tuple[str, ...], list[Task]] | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.config.option.collectonly:
            return
        for item in session.items:
            if CELL_KEY in item.stash:
                cell = item.stash[CELL_KEY]
                self.cells.add((cell.task.id, cell.arm, cell.seed))

    def add_node_ids(self, ids: list[str]) -> None:
        """Record the cells behind node ids like ``corpus/t/a/task.yaml::akm-s2``."""
        for nodeid in ids:
            path, _, name = nodeid.partition("::")
            arm, _, seed = name.rpartition("-s")
            if not path.endswith("task.yaml") or not seed.isdigit():
                continue  # not a cell (a soundness item, or someone else's test)
            task = self._task_of(path)
            if task is None:
                self.unidentified.add(nodeid)
            else:
                self.cells.add((task.id, arm, int(seed)))

    def _task_of(self, path: str) -> Task | None:
        """The selected task a node id's path names, however pytest made it relative.

        pytest writes a node id's path relative to the rootdir, or, for a corpus outside it, to
        the collection argument holding it; the controller of an xdist run sees only these
        strings. Try both, then the one selected task whose path ends the same way (pytest
        sometimes prefixes a corpus outside the rootdir with ``..`` components of its own).
        """
        cwd = self.config.invocation_params.dir
        bases = [self.state.settings.rootdir, cwd, *((cwd / a.split("::")[0]) for a in self.config.args)]
        for base in bases:
            task = self.state.selected.get((Path(base) / path).resolve())
            if task is not None:
                return task
        if self._by_suffix is None:
            self._by_suffix = {}
            for task in self.state.selected.values():
                parts = task.yaml_path.parts
                for n in range(1, len(parts) + 1):
                    self._by_suffix.setdefault(parts[-n:], []).append(task)
        parts = Path(path).parts
        for n in range(len(parts), 1, -1):  # the longest tail that names exactly one task
            found = self._by_suffix.get(parts[-n:], [])
            if len(found) == 1:
                return found[0]
            if found:
                return None  # ambiguous: shorter tails cannot tell them apart either
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        sample = getattr(report, "akmbench_sample", None)
        if sample is not None:
            # A cell that ran is a selected cell, whatever its node id looked like.
            self.cells.add((sample["task_id"], sample["arm"], sample["seed"]))
            self.samples[report.nodeid] = sample
        claimed = getattr(report, "akmbench_claimed", None)
        if claimed:
            self.claimed[report.nodeid] = claimed

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if session.config.option.collectonly:
            return  # nothing ran: the report of the last run stays as it is
        if not self.cells and not self.samples and not self.unidentified and self.state.track.runs_agent:
            return
        state = self.state
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        try:
            self._write_report(interrupted)  # under the interrupt hold taken at session finish
        finally:
            late = state.interrupts is not None and state.interrupts.drop()
        self._annotate(session)
        if late and not interrupted:
            self.late_interrupt = True
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        if interrupted or late:
            return
        failed = bool(self.problems or self.error)
        if self.envelope is not None and self.envelope.get("gates"):
            # With gates, they decide: green when all hold, the harness never failed and the
            # report is true to the run.
            harness_errors = any(r["outcome"] == "harness_error" for r in self.envelope["runs"])
            ok = all(g["ok"] for g in self.envelope["gates"]) and not harness_errors and not failed
            session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED
        elif failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write_report(self, interrupted: bool) -> None:
        state = self.state
        if not state.track.runs_agent:  # a check of the corpus (tracks/track.py)
            return self._write_soundness_report(interrupted)
        try:
            stored = resume.StoredSamples.load(state.store_dir)
            cells, adaptive_part = adaptive.narrow(self.config, self.cells, stored)  # the cells a round needed
            # The report covers what was selected (after -k/-m), read back from the store so a
            # resumed run reports every sample it has, not only this session's.
            inp = resume.report_input(
                tasks=state.tasks,
                arms=state.arms,
                seeds=state.seeds,
                cells=cells,
                slice_label=state.slice,
                ctx=state.context(),
                store_dir=state.store_dir,
                floor=state.floor,
                extra_samples=self.samples.values(),
                warnings=[*state.warnings, *self._claim_warnings()],
                cwd=state.settings.rootdir,
                baseline=state.baseline,
                gates=state.settings.gates,
                stored=stored,
                provenance=self._found_versions(),
                hash_of=state.fingerprint_hash,
            )
            self.problems = integrity.check(
                chosen=inp.samples,
                received=self.samples.values(),
                stored_by_run=stored.of_run(state.run_id),
                unidentified=self.unidentified,
            )
            complete = inp.complete and not interrupted and not self.problems
            complete = complete and (adaptive_part is None or adaptive_part["stopping_reason"] is not None)
            inp = dataclasses.replace(
                inp,
                complete=complete,
                warnings=[*self.problems, *inp.warnings, *run_record.save(self.config, state)],
                spend_cap=caps.report_block(self.config, stored),
            )
            inp, shard_block = shard.for_report(self.config, inp)  # a shard covers part of the cells
            envelope = report.build(inp)
            if shard_block is not None:
                envelope["shard"] = shard_block
            self.envelope = state.scrub.obj(adaptive.stamp(envelope, adaptive_part))
            self.paths = report_files.write(state.report_dir, self.envelope, state.store_dir)
        except (OSError, BenchError) as err:
            self._cannot_write(err)

    def _annotate(self, session: pytest.Session) -> None:
        """``::error``/``::warning`` lines for GitHub Actions (report/render/github.py)."""
        if not github.enabled():
            return
        files = github.task_files(self.state.tasks, self.state.settings.rootdir)
        lines = github.for_run(self.envelope, self.problems, self.error, files)
        if session.config.pluginmanager.get_plugin("terminalreporter") is not None:
            # GitHub reads a command only at the start of a line: printed now, under -q the
            # first would follow the progress line's "[100%]"; the summary starts on a line of its own.
            self.annotations = lines
            return
        for line in lines:
            print(line, flush=True)

    def _found_versions(self) -> dict[str, Any]:
        """The akm this run found, for a report whose samples never got as far as setting it up."""
        akm = self.state.akm
        found = {"akm_version": akm.version} if akm is not None and "akm" in self.state.arms else {}
        # What the attribute track checks its masked reruns against (plugin/attribute.py).
        return {**found, "providers": providers_setup(self.state)}

    def _cannot_write(self, err: OSError | BenchError) -> None:
        state = self.state
        detail = f"{err.strerror} ({err.filename})" if isinstance(err, OSError) and err.strerror else str(err)
        where = state.report_dir / state.track.report_subdir
        self.error = (
            f"cannot write the report to {where}: {detail}; the samples are in the store: "
            f"rebuild it with `python -m pytest_akmbench report --store {state.store_dir}`"
        )

    def _write_soundness_report(self, interrupted: bool) -> None:
        """A soundness run's report: no runs, the ``soundness`` block of the selected tasks."""
        state = self.state
        ctx = state.context()
        inp = report.ReportInput(
            tasks=state.tasks,
            arms=state.arms,
            seeds=state.seeds,
            slice=state.slice,
            stashes_root=ctx.stashes_root,
            samples=[],
            model=None,
            agent=ctx.agent.name,
            agent_version=ctx.agent.version,
            warnings=list(state.warnings),
            cwd=state.settings.rootdir,
            floor=state.floor,
            store_dir=state.store_dir,
        )
        try:
            envelope = report.build(inp)
            checked = envelope["soundness"] is not None and not envelope["soundness"]["unchecked"]
            envelope["complete"] = checked and not interrupted
            if not envelope["complete"]:
                envelope["verdict"] = "incomplete run — " + envelope["verdict"]
            self.envelope = state.scrub.obj(envelope)
            self.paths = report_files.write(state.soundness_report_dir, self.envelope, state.store_dir)
        except (OSError, BenchError) as err:
            self._cannot_write(err)

    def _claim_warnings(self) -> list[str]:
        if not self.claimed:
            return []
        holders = sorted(set(self.claimed.values()))
        return [
            f"{len(self.claimed)} cells were run meanwhile by another bench sharing this store "
            f"({'; '.join(holders[:3])}); this run reports their samples instead of running them twice"
        ]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        for line in self.annotations:
            tr.write_line(line)
        if self.error is not None:
            tr.write_sep("-", "akmbench")
            tr.write_line(f"ERROR: akmbench: {self.error}", red=True)
        if self.paths is None or self.envelope is None:
            return
        if self.error is None:
            tr.write_sep("-", "akmbench")
        if self.envelope.get("verdict"):
            tr.write_line(self.envelope["verdict"])
        arms = self.envelope["corpus"]["arms"]
        # A run of no arm (a soundness check) has no arm lines: its verdict line says what it showed.
        for arm in arms if any(self.envelope["aggregate"].get(a) for a in arms) else ():
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
        for problem in self.problems:
            tr.write_line(problem, red=True)
        for line in self._claim_warnings():
            tr.write_line(line)
        if not self.envelope["complete"]:
            part = None if self.problems else shard.terminal_line(self.envelope)  # a shard's is partial
            tr.write_line(
                part or "report is INCOMPLETE: not every selected cell ran"
                if not self.problems
                else "report is INCOMPLETE: it does not match the run (see above)"
            )
        for gate in self.envelope.get("gates") or []:
            tr.write_line(f"gate {'held' if gate['ok'] else 'FAILED'}: {gate['gate']}: {gate['message']}")
        if self.late_interrupt:
            tr.write_line("interrupted while the report was written: every cell had run, the report is whole")
        for line in arm_totals(self.envelope["runs"], self.envelope["corpus"]["arms"]):
            tr.write_line(line)
        for line in spend.terminal_lines(self.envelope.get("spend")):
            tr.write_line(line, red=line.startswith("stopped:"))
        tr.write_line(f"report: {self.paths[0]}")
        tr.write_line(f"summary: {self.paths[1]}")
        tr.write_line(f"html: {self.paths[2]}")
