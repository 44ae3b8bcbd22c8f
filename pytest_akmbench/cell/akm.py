"""The akm CLI as the akm arm uses it: versions, refs, per-cell setup and akm's own event log.

Two lines of akm are supported (docs/akm.md has the observed behaviour of each):

* **0.7**: the stash is ``AKM_STASH_DIR``; refs look like ``skill:name``; the events log is
  ``$XDG_CACHE_HOME/akm/events.jsonl``. ``akm index`` writes an index that akm uses only when
  ``AKM_STASH_DIR`` is the same path at search time, so every cell indexes its own stash copy
  at the path its agent will search.
* **0.9**: the stash became a *bundle* (``AKM_BUNDLE_DIR``); refs look like ``skills/name``;
  events are read with ``akm log``; negative feedback needs ``--reason``.

Both lines try to load a local embedding model on ``akm index`` (a download, offline a DNS
wait); each cell's akm config pins keyword search so a run never depends on a download, and
bun's package auto-install is pointed at an unreachable registry for the same reason.
Pure: no pytest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..system.untrusted import read_inside

SUPPORTED = ("0.7", "0.9")
INSTALL_HINT = (
    "install it into the project with `python -m pytest_akmbench install-tools --akm-bundles DIR` (DIR holding "
    'akm\'s bundles, akm-<version>.js; README, "Installing the tools") or pass --bench-akm PATH (ini bench_akm, config akm); '
    "only the akm arm needs it: --bench-arms noakm or -k noakm runs without"
)
OFFLINE = {"npm_config_registry": "http://127.0.0.1:9/", "BUN_CONFIG_REGISTRY": "http://127.0.0.1:9/"}
# Exit codes that mean akm itself could not work (config, internal error, not executable, not
# found, killed), as opposed to an agent asking for something that is not there (1, 2).
BROKEN_EXITS = frozenset((70, 78, 126, 127))
EVENTS_LIMIT = 32 * 1024 * 1024  # akm 0.7's event log read back from a cell: more is not a cell's
_PLURAL = {
    "skill": "skills",
    "knowledge": "knowledge",
    "command": "commands",
    "agent": "agents",
    "script": "scripts",
    "memory": "memories",
    "workflow": "workflows",
    "lesson": "lessons",
    "vault": "vaults",
    "wiki": "wikis",
}
_SINGULAR = {plural: singular for singular, plural in _PLURAL.items()}
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class AkmInfo:
    """One akm executable, probed once per process."""

    path: Path
    version: str
    line: str  # "0.7" or "0.9": which behaviour the harness expects
    sha256: str
    config: str  # the akm config.json every cell gets (keyword search pinned)
    warning: str | None = None

    @property
    def stash_var(self) -> str:
        return "AKM_BUNDLE_DIR" if self.line == "0.9" else "AKM_STASH_DIR"

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "line": self.line, "sha256": self.sha256}

    @classmethod
    def recorded(cls, tool: Mapping[str, Any]) -> AkmInfo:
        """The akm a sample's fingerprint names (``{"version", "sha256"}``), for an offline report:
        nothing to run, only what the cells ran."""
        version = str(tool.get("version") or "0.0.0")
        return cls(path=Path(), version=version, line=_line(version)[0], sha256=str(tool.get("sha256")), config="")


def locate(explicit: str | os.PathLike[str] | None, project: Path | None = None) -> Path:
    """The akm executable: the one given (``--bench-akm``, a config's ``akm``), else the newest
    of ``<project>/.tools/akm/<version>/akm`` (where install-tools puts it), else ``akm`` on PATH."""
    if explicit:
        return Path(explicit).expanduser().absolute()  # akm runs in a throwaway HOME: no relative path
    local = installed(project) if project is not None else None
    if local is not None:
        return local.absolute()
    found = shutil.which("akm")
    if found is None:
        where = f"{project / '.tools' / 'akm'}/<version>/akm and " if project is not None else ""
        raise ConfigError(
            f"the akm arm needs the akm executable and found none (looked in {where}on PATH); {INSTALL_HINT}",
            usage=True,
        )
    return Path(found)


def installed(project: Path) -> Path | None:
    """The akm under ``<project>/.tools/akm/<version>/akm`` of the newest supported version (of
    the newest version when none is supported), or None."""
    try:
        entries = list((project / ".tools" / "akm").iterdir())
    except OSError:
        return None
    found = []
    for entry in entries:
        match = _VERSION.fullmatch(entry.name)
        exe = entry / "akm"
        if match and exe.is_file() and os.access(exe, os.X_OK):
            major, minor, patch = (int(x) for x in match.groups())
            found.append((f"{major}.{minor}" in SUPPORTED, (major, minor, patch), exe))
    return max(found)[2] if found else None


def detect(path: Path, timeout_s: float = 60.0) -> AkmInfo:
    """Run ``akm --version`` and pin keyword search in a throwaway HOME; one-line errors."""
    path = Path(path).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ConfigError(f"{path}: akm executable not found or not executable; {INSTALL_HINT}", usage=True)
    resolved = path.resolve()
    home = Path(tempfile.mkdtemp(prefix="bench-akm-probe-"))
    try:
        env = private_env(home)
        code, out = _run([str(path), "--version"], env, home, timeout_s)
        match = _VERSION.search(out) if code == 0 else None
        if match is None:
            raise ConfigError(f"{path}: `akm --version` failed (exit {code}): {out.strip()[-200:]}; {INSTALL_HINT}")
        version = match.group(0)
        line, warning = _line(version)
        code, out = _run([str(path), "config", "set", "semanticSearchMode", "off"], env, home, timeout_s)
        config_file = home / ".config" / "akm" / "config.json"
        if code != 0 or not config_file.is_file():
            raise ConfigError(
                f"{path}: `akm config set semanticSearchMode off` failed (exit {code}): {out.strip()[-200:]}"
            )
        config = config_file.read_text(encoding="utf-8")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return AkmInfo(path=resolved, version=version, line=line, sha256=_sha256(resolved), config=config, warning=warning)


def _line(version: str) -> tuple[str, str | None]:
    major, minor, _ = (int(x) for x in version.split("."))
    line = f"{major}.{minor}"
    if line in SUPPORTED:
        return line, None
    nearest = "0.9" if (major, minor) > (0, 7) else "0.7"
    return nearest, f"akm {version} is not a supported version ({', '.join(SUPPORTED)}); run as akm {nearest}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def private_env(home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment whose HOME and XDG dirs are ``home``'s, offline for package installs."""
    env = dict(base or {"PATH": os.environ.get("PATH", os.defpath)})
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
    )
    env.update(OFFLINE)
    return env


def _run(argv: list[str], env: Mapping[str, str], cwd: Path, timeout_s: float) -> tuple[int, str]:
    try:
        proc = subprocess.run(
            argv,
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            timeout=timeout_s,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout_s:g}s"
    except OSError as err:
        return -1, str(err)
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


# ---------------------------------------------------------------- one cell


def cell_env(info: AkmInfo, stash: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus what akm needs to find this cell's stash and stay offline."""
    out = dict(env)
    out["AKM_STASH_DIR"] = str(stash)
    if info.line == "0.9":
        out["AKM_BUNDLE_DIR"] = str(stash)
    out.update(OFFLINE)
    return out


def write_config(info: AkmInfo, env: Mapping[str, str]) -> None:
    """Give the cell's private akm config (under its XDG config home) the pinned settings."""
    config_dir = Path(env["XDG_CONFIG_HOME"]) / "akm"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.json").write_text(info.config, encoding="utf-8")


def index_report(output: str) -> dict[str, Any]:
    """What ``akm index`` said about itself: entries and the search mode it ended up with."""
    try:
        data = json.loads(output[output.find("{") :]) if "{" in output else {}
    except ValueError:
        data = {}
    verification = data.get("verification")
    verification = verification if isinstance(verification, dict) else {}
    semantic = verification.get("semanticSearchEnabled")
    return {
        "entries": data.get("totalEntries") if isinstance(data.get("totalEntries"), int) else None,
        "search_mode": "semantic" if semantic else ("keyword" if semantic is False else None),
        "semantic_status": verification.get("semanticStatus"),
    }


def log_argv(info: AkmInfo) -> list[str] | None:
    """The command that prints akm's event log, or None where akm keeps it in a file (0.7)."""
    return [str(info.path), "log", "--format", "json", "--detail", "full"] if info.line == "0.9" else None


def events_file(env: Mapping[str, str]) -> Path:
    """Where akm 0.7 appends its events."""
    return Path(env["XDG_CACHE_HOME"]) / "akm" / "events.jsonl"


def parse_log(output: str) -> list[dict[str, Any]] | None:
    """The normalised events of ``akm log --format json`` output; None if it is not that."""
    try:
        raw = json.loads(output[output.find("{") :]).get("events") if "{" in output else None
    except (ValueError, AttributeError):
        raw = None
    return [e for e in map(normalise_event, raw) if e is not None] if isinstance(raw, list) else None


def parse_events_file(path: Path, root: Path | None = None) -> list[dict[str, Any]]:
    """The normalised events of an akm 0.7 ``events.jsonl`` (missing file: none). With ``root``
    (a run dir the agent wrote to) only a regular file inside it is read (system/untrusted.py)."""
    if root is not None:
        data = read_inside(path, root, limit=EVENTS_LIMIT) or b""
    else:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
    events: list[dict[str, Any]] = []
    for line in data.splitlines():
        try:
            event = normalise_event(json.loads(line))
        except ValueError:
            continue
        if event is not None:
            events.append(event)
    return events


def since(events: list[dict[str, Any]], start_ms: int) -> list[dict[str, Any]]:
    """The events at or after ``start_ms`` (the harness's own index run came before)."""
    return [e for e in events if e["t_ms"] is not None and e["t_ms"] >= start_ms]


def normalise_event(raw: Any) -> dict[str, Any] | None:
    """``{"kind", "ref", "query", "results", "hit_count", "signal", "t_ms"}`` for a search,
    show or feedback event of either akm line; None for other events. akm logs only what it
    served: a refused call leaves no event."""
    if not isinstance(raw, dict) or raw.get("eventType") not in ("search", "show", "feedback"):
        return None
    meta = raw.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    results = meta.get("resultRefs")
    ref = raw.get("ref") if isinstance(raw.get("ref"), str) else None
    signal = meta.get("signal")
    return {
        "kind": raw["eventType"],
        "ref": ref,
        "query": meta.get("query") if isinstance(meta.get("query"), str) else None,
        "results": [r for r in results if isinstance(r, str)] if isinstance(results, list) else None,
        "hit_count": meta.get("hitCount") if isinstance(meta.get("hitCount"), int) else None,
        "signal": signal if signal in ("positive", "negative") else None,
        "t_ms": _ms(raw.get("ts")),
    }


def _ms(ts: Any) -> int | None:
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return int(ts)
    if not isinstance(ts, str):
        return None
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


# ---------------------------------------------------------------- refs


def ref_key(ref: str | None) -> tuple[str, str] | None:
    """``(type, name)`` of a ref in either syntax: ``skill:x``, ``skills/x``, ``origin//skill:x``,
    ``stash//skills/x#section``, ``knowledge:guide.md``; None if it is not a ref."""
    if not ref:
        return None
    ref = ref.rsplit("//", 1)[-1].split("#", 1)[0].strip()
    if ":" in ref:
        kind, _, name = ref.partition(":")
    elif "/" in ref:
        plural, _, name = ref.partition("/")
        kind = _SINGULAR.get(plural, plural[:-1] if plural.endswith("s") else plural)
    else:
        return None
    name = name[:-3] if name.endswith(".md") else name
    return (kind, name) if kind and name else None


def same_asset(ref: str | None, gold: str | None) -> bool:
    """Whether ``ref`` names the asset ``gold`` (or a part of it), whatever the syntax."""
    a, b = ref_key(ref), ref_key(gold)
    if a is None or b is None:
        return False
    return a[0] == b[0] and (a[1] == b[1] or a[1].startswith(b[1] + "/"))


def format_ref(ref: str, line: str) -> str:
    """``ref`` in the syntax akm ``line`` expects (a corpus's ``skill:x`` is 0.9's ``skills/x``)."""
    key = ref_key(ref)
    if key is None:
        return ref
    kind, name = key
    return f"{_PLURAL.get(kind, kind + 's')}/{name}" if line == "0.9" else f"{kind}:{name}"


def asset_exists(stash: Path, ref: str) -> bool:
    """Whether ``ref`` (either syntax) names an asset of the stash: ``skills/<name>/``,
    ``knowledge/<name>.md`` and the like."""
    key = ref_key(ref)
    if key is None:
        return False
    kind, name = key
    folder = stash / _PLURAL.get(kind, kind + "s")
    return (folder / name).is_dir() or any(folder.glob(f"{name}.*"))


def search_refs(output: str) -> list[str] | None:
    """The refs an ``akm search`` printed, in rank order; None if the output is not akm's."""
    start = output.find("{")
    if start >= 0:
        try:
            data = json.loads(output[start:])
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("hits"), list):
            return [h["ref"] for h in data["hits"] if isinstance(h, dict) and isinstance(h.get("ref"), str)]
    refs = re.findall(r"^\s*ref:\s*(\S+)", output, re.MULTILINE)  # --format text
    return refs or None
