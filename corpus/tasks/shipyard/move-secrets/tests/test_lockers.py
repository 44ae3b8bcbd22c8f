from pathlib import Path

import yaml

UNCHANGED = {
    "shipyard": 3,
    "service": {"name": "mail-relay", "crew": "crew-comms", "tier": "t3"},
    "hull": {
        "image": "harbor.corp.internal/comms/mail-relay:1.8.2",
        "berths": 1,
        "cargo": {"cpu": "250m", "mem": "512Mi"},
    },
    "docks": [{"name": "main", "dock": 2525, "proto": "tcp"}],
    "tides": {"mode": "lockstep", "swell": "100%"},
    "beacons": {"ready": "/__ready", "live": "/__live", "grace": "30s"},
}
LOCKERS = [
    {"env": "DKIM_PRIVATE_KEY", "ref": "vault://comms/mail-relay/dkim-private-key"},
    {"env": "SMTP_PASSWORD", "ref": "vault://comms/mail-relay/smtp-password"},
]


def text():
    path = Path("shipyard.yaml")
    assert path.is_file(), "shipyard.yaml is missing"
    return path.read_text(encoding="utf-8")


def load():
    doc = yaml.safe_load(text())
    assert isinstance(doc, dict), "shipyard.yaml must be a YAML mapping"
    return doc


def test_no_plaintext_secrets():
    body = text()
    assert "hunter2" not in body
    assert "PRIVATE KEY-----" not in body
    assert "env" not in load(), "the plain-text env block must be gone"


def test_lockers_exact():
    assert load().get("lockers") == LOCKERS


def test_rest_unchanged():
    doc = load()
    assert set(doc) == set(UNCHANGED) | {"lockers"}
    for key, value in UNCHANGED.items():
        assert doc[key] == value, f"{key} must not change"
