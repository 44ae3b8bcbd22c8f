"""Tests for pytest_akmbench.cell.akm: refs, outputs and logs of both akm lines, version probing.

Output shapes here are copied from real akm 0.7.0 and 0.9.0 (tests/akm checks them live).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.cell import akm
from pytest_akmbench.errors import ConfigError


class TestRefs:
    @pytest.mark.parametrize(
        ("ref", "key"),
        [
            ("skill:deploy", ("skill", "deploy")),
            ("skills/deploy", ("skill", "deploy")),
            ("knowledge:guide.md", ("knowledge", "guide")),
            ("knowledge/guide", ("knowledge", "guide")),
            ("origin//skill:x", ("skill", "x")),
            ("stash//skills/x#usage", ("skill", "x")),
            ("memories/m1", ("memory", "m1")),
            ("widgets/w", ("widget", "w")),
            ("plain", None),
            ("", None),
            (None, None),
            ("skill:", None),
        ],
    )
    def test_ref_key_reads_both_syntaxes(self, ref: str | None, key: tuple[str, str] | None) -> None:
        """0.7's type:name and 0.9's types/name (with origins and fragments) give the same key."""
        assert akm.ref_key(ref) == key

    def test_format_ref_per_line(self) -> None:
        """A corpus's refs are translated for the installed akm; already-translated ones stay."""
        assert akm.format_ref("skill:logline", "0.9") == "skills/logline"
        assert akm.format_ref("knowledge:logline-pii", "0.9") == "knowledge/logline-pii"
        assert akm.format_ref("memory:m", "0.9") == "memories/m"
        assert akm.format_ref("skills/logline", "0.7") == "skill:logline"
        assert akm.format_ref("skill:logline", "0.7") == "skill:logline"
        assert akm.format_ref("not a ref", "0.9") == "not a ref"

    def test_same_asset(self) -> None:
        """Same type and name (or a part of it), in any syntax; never a prefix of another name."""
        assert akm.same_asset("stash//skills/x", "skill:x") and akm.same_asset("skill:x/SKILL.md", "skill:x")
        assert not akm.same_asset("skill:xy", "skill:x") and not akm.same_asset("knowledge:x", "skill:x")

    def test_asset_exists(self, tmp_path: Path) -> None:
        """A ref in either syntax names a skill directory or a knowledge file of the stash."""
        (tmp_path / "skills" / "deploy").mkdir(parents=True)
        (tmp_path / "knowledge").mkdir()
        (tmp_path / "knowledge" / "guide.md").write_text("x")
        assert akm.asset_exists(tmp_path, "skill:deploy") and akm.asset_exists(tmp_path, "skills/deploy")
        assert akm.asset_exists(tmp_path, "knowledge/guide") and not akm.asset_exists(tmp_path, "knowledge:nope")
        assert not akm.asset_exists(tmp_path, "garbage")


class TestOutputs:
    def test_search_refs(self) -> None:
        """JSON hits (both lines), text output, and None for what is not akm's search output."""
        out = json.dumps({"hits": [{"ref": "skills/a", "type": "skill"}, {"ref": "knowledge/b"}, {"name": "c"}]})
        assert akm.search_refs("warning: x\n" + out) == ["skills/a", "knowledge/b"]
        assert akm.search_refs('{"hits": [], "tip": "No matching stash assets"}') == []
        assert akm.search_refs("knowledge: b\n  ref: knowledge/b\n  action: akm show\n") == ["knowledge/b"]
        assert akm.search_refs('{"ok": false, "code": "CONFIG"}') is None
        assert akm.search_refs("bun: command not found") is None

    def test_index_report(self) -> None:
        """Entries and search mode from `akm index` output; unknown when it printed no JSON."""
        out = json.dumps(
            {"totalEntries": 8, "verification": {"semanticSearchEnabled": False, "semanticStatus": "disabled"}}
        )
        assert akm.index_report("Embedding generation failed\n" + out) == {
            "entries": 8,
            "search_mode": "keyword",
            "semantic_status": "disabled",
        }
        assert (
            akm.index_report(json.dumps({"totalEntries": 3, "verification": {"semanticSearchEnabled": True}}))[
                "search_mode"
            ]
            == "semantic"
        )
        assert akm.index_report("crash") == {"entries": None, "search_mode": None, "semantic_status": None}


class TestEvents:
    def test_normalise_both_lines(self) -> None:
        """0.7 events-file lines and 0.9 log entries give the same normalised events; others are dropped."""
        v07 = {
            "schemaVersion": 1,
            "ts": "2026-11-30T21:10:01.607Z",
            "eventType": "search",
            "metadata": {"query": "logline", "hitCount": 2, "resultRefs": ["skill:logline", "knowledge:a"]},
        }
        assert akm.normalise_event(v07) == {
            "kind": "search",
            "ref": None,
            "query": "logline",
            "results": ["skill:logline", "knowledge:a"],
            "hit_count": 2,
            "signal": None,
            "t_ms": 1796073001607,
        }
        v09 = {
            "id": 7,
            "eventType": "feedback",
            "ref": "stash//skills/logline",
            "ts": "2026-11-30T21:10:35.943Z",
            "metadata": {"signal": "positive"},
        }
        assert akm.normalise_event(v09)["signal"] == "positive"  # type: ignore[index]
        assert akm.normalise_event({"eventType": "select", "ref": "skills/x"}) is None
        assert akm.normalise_event("garbage") is None
        assert akm.normalise_event({"eventType": "show", "ts": "not a time"})["t_ms"] is None  # type: ignore[index]

    def test_parse_log_and_file(self, tmp_path: Path) -> None:
        """0.9's `akm log` JSON and 0.7's events file (torn lines skipped, missing file empty)."""
        log = json.dumps(
            {
                "totalCount": 2,
                "events": [
                    {"eventType": "show", "ref": "skills/x", "ts": "2026-11-30T21:10:35.283Z", "metadata": {}},
                    {"eventType": "select", "ref": "skills/x", "ts": "2026-11-30T21:10:35.302Z"},
                ],
            }
        )
        assert [e["kind"] for e in akm.parse_log(log) or []] == ["show"]
        assert akm.parse_log("Error: no stash") is None and akm.parse_log('{"ok": false}') is None
        path = tmp_path / "events.jsonl"
        path.write_text('{"eventType":"show","ref":"skill:x","ts":1}\n{"eventType":"sea\n')
        assert [e["ref"] for e in akm.parse_events_file(path)] == ["skill:x"]
        assert akm.parse_events_file(tmp_path / "missing.jsonl") == []
        assert akm.events_file({"XDG_CACHE_HOME": "/c"}) == Path("/c/akm/events.jsonl")

    def test_since_drops_earlier_and_untimed_events(self) -> None:
        """Only events from the agent's start count (the harness's own index run came before)."""
        events = [{"t_ms": 5}, {"t_ms": 10}, {"t_ms": None}]
        assert akm.since(events, 10) == [{"t_ms": 10}]  # type: ignore[list-item]


class TestDetect:
    def exe(self, path: Path, body: str) -> Path:
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        return path

    def test_missing_or_not_executable(self, tmp_path: Path) -> None:
        """One-line errors that say how to install akm."""
        with pytest.raises(ConfigError, match=r"not found or not executable.*install-tools --akm-bundles DIR"):
            akm.detect(tmp_path / "nope")
        (tmp_path / "plain").write_text("x")
        with pytest.raises(ConfigError, match="not executable"):
            akm.detect(tmp_path / "plain")

    def test_version_that_fails(self, tmp_path: Path) -> None:
        """An akm whose --version fails (e.g. its runtime is missing) is refused with its output."""
        broken = self.exe(tmp_path / "akm", 'echo "bun: not found" >&2; exit 127\n')
        with pytest.raises(ConfigError, match=r"--version` failed \(exit 127\): bun: not found"):
            akm.detect(broken)

    def test_unknown_version_runs_as_the_nearest_line_with_a_warning(self, tmp_path: Path) -> None:
        """An akm of another version is used as the nearest supported line, and says so."""
        fake = self.exe(
            tmp_path / "akm",
            'if [ "$1" = --version ]; then echo 0.10.2; exit 0; fi\n'
            'mkdir -p "$XDG_CONFIG_HOME/akm"; echo "{}" > "$XDG_CONFIG_HOME/akm/config.json"\n',
        )
        info = akm.detect(fake)
        assert info.version == "0.10.2" and info.line == "0.9"
        assert info.warning is not None and "0.10.2 is not a supported version" in info.warning
        assert len(info.sha256) == 64

    def test_locate(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The given path first, else the project's .tools/akm, else akm on PATH, else an error
        naming how to install it: a command of ours that works (issue 29, item 3: it advised
        `npm install -g akm-cli`, which the registry does not have)."""
        monkeypatch.setenv("PATH", str(tmp_path))
        project = tmp_path / "project"
        with pytest.raises(ConfigError) as err:
            akm.locate(None, project)
        assert f"looked in {project}/.tools/akm/<version>/akm and on PATH" in str(err.value)
        assert "`python -m pytest_akmbench install-tools --akm-bundles DIR`" in str(err.value)
        assert "akm-cli" not in str(err.value) and "npm install" not in str(err.value)
        exe = self.exe(tmp_path / "akm", "exit 0\n")
        assert akm.locate(None, project) == exe and akm.locate("/else/akm", project) == Path("/else/akm")
        (project / ".tools" / "akm" / "0.9.0").mkdir(parents=True)
        local = self.exe(project / ".tools" / "akm" / "0.9.0" / "akm", "exit 0\n")
        assert akm.locate(None, project) == local and akm.locate(None) == exe

    def test_the_newest_supported_akm_of_the_project_is_found(self, tmp_path: Path) -> None:
        """.tools/akm/<version>/akm as install-tools (and .ci/akm) leave it: the newest version
        of a supported line, else the newest; a directory that is not a version or holds no
        executable akm is not one."""
        tools = tmp_path / ".tools" / "akm"
        assert akm.installed(tmp_path) is None
        for version in ("0.7.0", "0.9.0", "0.9.2", "1.3.0", "latest"):
            (tools / version).mkdir(parents=True)
            self.exe(tools / version / "akm", "exit 0\n")
        (tools / "0.9.10").mkdir()
        (tools / "0.9.10" / "akm").write_text("not executable")
        assert akm.installed(tmp_path) == tools / "0.9.2" / "akm"
        for version in ("0.7.0", "0.9.0", "0.9.2"):
            (tools / version / "akm").unlink()
        assert akm.installed(tmp_path) == tools / "1.3.0" / "akm"
