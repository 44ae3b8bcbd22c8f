"""The attribute report's files: attribute.json (the envelope), attribute.md and attribute.html (docs/report.md,
"The attribute envelope"). They go beside a utility report, never over it: the base of an
attribute run is often the report.json of the same report directory."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import IO

from ...report.envelope_rows import AttributionRow
from ...report.envelope_types import AttributeEnvelope, AttributionRef
from ...report.render import html_attribute
from ...report.render.fmt import fmt_ci, fmt_p, md_table, num, signed
from ...store.atomic import write as atomic_write

JSON_NAME = "attribute.json"
MARKDOWN_NAME = "attribute.md"
HTML_NAME = "attribute.html"


def _tasks(row: AttributionRow) -> str:
    ids = row["loaded_on_tasks"]
    shown = ", ".join(ids[:3]) + (f", … ({len(ids) - 3} more)" if len(ids) > 3 else "")
    return f"{len(ids)}: {shown}"


def table(envelope: AttributeEnvelope) -> str:
    """asset, the tasks it was loaded on, base rate, masked rate, delta [95% CI], Holm p."""
    rows = []
    for r in envelope["attributions"]:
        c = r["comparison"]
        rows.append(
            [
                f"{r['rank']}. {r['asset_ref']}",
                _tasks(r),
                num(r["base_pass_rate"]),
                num(r["masked_pass_rate"]),
                f"{signed(c['delta'])} {fmt_ci(c['low'], c['high'], with_sign=True)}" if c else "n/a (no paired task)",
                fmt_p(c["p_value_holm"]) if c else "n/a",
                html_attribute.matters(r, envelope["attributions"]),
            ]
        )
    head = ["asset", "tasks it was loaded on", "base rate", "masked rate", "delta [95% CI]", "p (Holm)", "matters"]
    return md_table(rows, head)


def markdown(envelope: AttributeEnvelope) -> str:
    base, attr = envelope["base"], envelope["attribution"]
    lines = [
        "# Attribute: which assets matter",
        "",
        envelope["verdict"],
        "",
        f"Base: `{base['path']}`"
        + (f" (the report of run config `{base['config']}`)" if base.get("config") else "")
        + f" (model {base['model'] or 'unknown'}, akm {base['akm_version'] or 'unknown'}"
        + ("" if base["complete"] else ", an INCOMPLETE base run")
        + ").",
        f"Masked: the top {len(attr['maskedRefs'])} of {attr['assets_loaded']} loaded assets (top {attr['top']}); "
        f"ranking: {attr['ranking']}.",
        "Each asset is masked only on the tasks whose base akm runs loaded it; delta = base rate − masked rate "
        "per task, averaged over those tasks, with the paired permutation interval of the utility report.",
        f"Base rate: {_reference(attr.get('reference'))}.",
        f"Masked akm runs: {envelope['runsPerformed']}; unmasked reference runs: "
        f"{envelope.get('referenceRunsPerformed', 0)}.",
        "",
        table(envelope),
        "",
    ]
    for w in envelope["warnings"]:
        lines.append(f"- warning: {w}")
    return "\n".join(lines).rstrip() + "\n"


def _reference(reference: AttributionRef | None) -> str:
    seeds = reference["seeds"] if reference else []
    where = f"seeds {seeds[0]}–{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}" if seeds else "no seed"
    return (
        f"the unmasked akm rate of fresh reruns of the same tasks ({where}), not of the base runs "
        "that chose the assets and tasks (docs/tracks.md)"
    )


def _fill(fh: IO[str], *, text: str) -> None:
    fh.write(text)


def write(directory: Path, envelope: AttributeEnvelope) -> tuple[Path, Path, Path]:
    """Write attribute.json, attribute.md and attribute.html atomically; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = (directory / JSON_NAME, directory / MARKDOWN_NAME, directory / HTML_NAME)
    texts = (json.dumps(envelope, indent=2) + "\n", markdown(envelope), html_attribute.render(envelope))
    for path, text in zip(paths, texts):
        atomic_write(path, functools.partial(_fill, text=text))  # 0644, as the utility report's files
    return paths
