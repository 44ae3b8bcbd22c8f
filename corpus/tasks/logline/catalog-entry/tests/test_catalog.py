from pathlib import Path

import yaml

EXISTING = {
    "signup.account.created": {"sev": "S4", "owner": "crew-identity", "since": "3.0.0",
                               "ctx_keys": ["email", "plan", "user_id"], "pii": True},
    "signup.sms.deferred": {"sev": "S3", "owner": "crew-identity", "since": "4.2.1",
                            "ctx_keys": ["contact_phone", "retry_in_ms"], "pii": True},
}
NEW = {"sev": "S4", "owner": "crew-growth", "since": "4.6.0",
       "ctx_keys": ["invite_id", "invitee_email", "inviter_id"], "pii": True}


def load():
    path = Path("events.catalog.yaml")
    assert path.is_file(), "events.catalog.yaml is missing"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def test_header_kept():
    assert load()["catalog"] == "logline/3"


def test_existing_entries_untouched():
    events = load()["events"]
    for name, entry in EXISTING.items():
        assert events.get(name) == entry


def test_only_one_event_added():
    assert set(load()["events"]) == set(EXISTING) | {"signup.invite.sent"}


def test_new_entry():
    entry = load()["events"]["signup.invite.sent"]
    assert entry == NEW
