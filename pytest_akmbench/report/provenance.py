"""The report's provenance (what made the reported samples: plugin, agent, model, akm, sandbox,
network) and its tamper list, read from the samples themselves so the offline ``report`` says
the same as the run (docs/report.md, "Provenance" and "Tamper")."""

from __future__ import annotations

import json
import platform
import socket
import sys
from typing import TYPE_CHECKING, Any, cast

from ..records import Sample
from .envelope_types import ProvenanceBlock

if TYPE_CHECKING:
    from .envelope import ReportInput


def _plugin_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-akmbench")
    except PackageNotFoundError:
        return "0.0.0"


def tampering(runs: list[Sample]) -> list[dict[str, Any]]:
    """The runs whose agent left something that could stand in for the verifier's tools
    (cell/tamper.py), each with what was found."""
    return [
        {"task_id": s["task_id"], "arm": s["arm"], "seed": s["seed"], "outcome": s["outcome"], "what": s["tamper"]}
        for s in runs
        if s.get("tamper")
    ]


def provenance(inp: ReportInput, runs: list[Sample]) -> ProvenanceBlock:
    extra = dict(inp.provenance or {})
    out: dict[str, Any] = {
        "plugin_version": _plugin_version(),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(terse=True),
        "host": socket.gethostname(),
        "agent": {"name": inp.agent, "version": inp.agent_version},
        "model": inp.model,
        "opencode_version": extra.pop("opencode_version", inp.agent_version if inp.agent == "opencode" else None),
        # The samples say which akm they ran with; the caller's (the one the run found) fills in
        # when none did, e.g. every cell ended before akm was set up.
        **{k: v if v is not None else extra.pop(k, None) for k, v in _akm_provenance(runs).items()},
        "providers": _providers(runs, extra.pop("providers", None)),
        "prompt_versions": sorted({str(s["prompt_version"]) for s in runs if s.get("prompt_version")}),
        "fingerprints": sorted({str(s["fingerprint_hash"]) for s in runs if s.get("fingerprint_hash")}),
        # The sandbox the reported samples ran in; a fingerprint without one ran unsandboxed.
        "sandbox": ",".join(sorted({(s.get("fingerprint") or {}).get("sandbox") or "none" for s in runs})) or None,
        # A sandboxed agent's network ("isolated": its model only); unsandboxed runs have the host's.
        "network": ",".join(sorted({_network(s.get("fingerprint") or {}) for s in runs})) or None,
        "samples_from_store": sum(bool(s.get("from_store")) for s in runs),
        "store": str(inp.store_dir) if inp.store_dir is not None else None,
    }
    out.update({k: v for k, v in extra.items() if not k.startswith("akm_")})
    # The akm fields and the caller's extras are merged in by name (run/resume.py passes them).
    return cast("ProvenanceBlock", out)


def _network(fp: dict[str, Any]) -> str:
    if not fp.get("sandbox"):
        return "host"
    return str(fp.get("network") or ("isolated" if fp.get("boundary") else "host"))


def _providers(runs: list[Sample], found: Any) -> Any:
    """The agent's provider setup the samples record (so the offline ``report`` says the same);
    the run's own when none does; a list when the samples disagree."""
    distinct = {json.dumps(s["providers"], sort_keys=True) for s in runs if isinstance(s.get("providers"), dict)}
    if not distinct:
        return found
    got = [json.loads(x) for x in sorted(distinct)]
    return got[0] if len(got) == 1 else got


def _akm_provenance(runs: list[Sample]) -> dict[str, Any]:
    """Which akm the akm arm's samples ran with, read from the samples themselves (so the
    offline ``report`` command says the same). A value is a list when the samples disagree."""
    setups = [x for x in (s.get("akm_setup") for s in runs) if isinstance(x, dict)]

    def one(values: list[Any]) -> Any:
        distinct = sorted({v for v in values if v is not None}, key=str)
        return None if not distinct else distinct[0] if len(distinct) == 1 else distinct

    return {
        "akm_version": one([x.get("version") for x in setups]),
        "akm_sha256": one([x.get("sha256") for x in setups]),
        "akm_search_mode": one([(x.get("index") or {}).get("search_mode") for x in setups]),
    }
