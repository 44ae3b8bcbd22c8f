from pathlib import Path

PATH = Path("runbooks/ticket-hub.md")

HEAD = """---
service: ticket-hub
crew: crew-support
sev-floor: RED-2
pager: pd://support-primary
reviewed: 2024-06-03
---
# Runbook: ticket-hub

## Signals
- `TicketHubApiErrors`: more than 2% of API requests return 5xx
- `TicketHubQueueBacklog`: the inbound email queue is older than 10 minutes

## First five minutes
1. Check the ticket-hub dashboard for error rate by endpoint.
2. Check the email ingest queue age.

## Mitigations
### M1 Restart the API pods [safe]
Rolling restart of the api deployment.

### M2 Fail over to the secondary region [risky]
Only with the incident lead's approval.

"""
TAIL = """## Afterwards
- File the incident review within two business days.
"""


def text():
    assert PATH.is_file(), "runbooks/ticket-hub.md is missing"
    return PATH.read_text(encoding="utf-8")


def test_rest_of_runbook_unchanged():
    body = text()
    assert body.count("## Escalation ladder") == 1
    head, rest = body.split("## Escalation ladder", 1)
    assert head == HEAD
    assert rest.split("## Afterwards", 1)[1].strip() == TAIL.split("## Afterwards", 1)[1].strip()


def test_ladder_rows():
    section = text().split("## Escalation ladder", 1)[1].split("## Afterwards", 1)[0]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")]
            for ln in section.splitlines() if ln.strip().startswith("|")]
    assert rows[0] == ["step", "page", "after"]
    assert [r for r in rows if r and r[0].startswith("E")] == [
        ["E1", "pd://support-primary", "0m"],
        ["E2", "pd://support-secondary", "10m"],
        ["E3", "pd://ic-rotation", "20m"],
    ]
