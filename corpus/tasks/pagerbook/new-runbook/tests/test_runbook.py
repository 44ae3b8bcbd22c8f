import re
from pathlib import Path

import yaml

PATH = Path("runbooks/stock-ledger.md")


def parts():
    assert PATH.is_file(), "runbooks/stock-ledger.md is missing"
    text = PATH.read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n(.*)\Z", text, re.S)
    assert m, "runbook must start with a --- front matter block"
    return yaml.safe_load(m.group(1)), m.group(2)


def test_front_matter():
    fm, _ = parts()
    assert {k: str(v) for k, v in fm.items()} == {
        "service": "stock-ledger",
        "crew": "crew-inventory",
        "sev-floor": "AMBER",
        "pager": "pd://inventory-primary",
        "reviewed": "2025-02-10",
    }


def test_title_and_sections_in_order():
    _, body = parts()
    lines = [ln.rstrip() for ln in body.splitlines() if ln.strip()]
    assert lines[0] == "# Runbook: stock-ledger"
    assert [ln for ln in lines if ln.startswith("## ")] == [
        "## Signals", "## First five minutes", "## Mitigations", "## Escalation ladder", "## Afterwards"]


def test_signals():
    _, body = parts()
    assert re.search(r"^- `StockLedgerLagHigh`: \S", body, re.M)
    assert re.search(r"^- `StockLedgerWriteErrors`: \S", body, re.M)


def test_first_five_minutes_numbered():
    _, body = parts()
    section = body.split("## First five minutes", 1)[1].split("## Mitigations", 1)[0]
    assert re.search(r"^1\. \S", section, re.M) and re.search(r"^2\. \S", section, re.M)


def test_mitigation_headings():
    _, body = parts()
    assert [ln.rstrip() for ln in body.splitlines() if ln.startswith("### ")] == [
        "### M1 Restart the ledger consumers [safe]",
        "### M2 Replay the dead-letter queue [risky]",
        "### M3 Fail over writes to the standby region [risky]",
    ]


def test_escalation_ladder():
    _, body = parts()
    section = body.split("## Escalation ladder", 1)[1].split("## Afterwards", 1)[0]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")]
            for ln in section.splitlines() if ln.strip().startswith("|")]
    assert rows[0] == ["step", "page", "after"]
    assert [r for r in rows if r and r[0].startswith("E")] == [
        ["E1", "pd://inventory-primary", "0m"],
        ["E2", "pd://inventory-secondary", "30m"],
        ["E3", "pd://inventory-lead", "90m"],
    ]
