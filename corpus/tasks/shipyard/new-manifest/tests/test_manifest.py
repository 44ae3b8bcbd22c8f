from pathlib import Path

import yaml

EXPECTED = {
    "shipyard": 3,
    "service": {"name": "ledger-sync", "crew": "crew-payments", "tier": "t2"},
    "hull": {
        "image": "harbor.corp.internal/payments/ledger-sync:2.14.0",
        "berths": 3,
        "cargo": {"cpu": "500m", "mem": "1024Mi"},
    },
    "docks": [{"name": "main", "dock": 8080, "proto": "tcp"}],
    "tides": {"mode": "rolling", "swell": "25%"},
    "beacons": {"ready": "/__ready", "live": "/__live", "grace": "45s"},
}


def load():
    path = Path("shipyard.yaml")
    assert path.is_file(), "shipyard.yaml is missing from the workspace root"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), "shipyard.yaml must be a YAML mapping"
    return doc


def test_top_level_keys():
    assert set(load()) == set(EXPECTED), "top-level keys must be exactly " + ", ".join(sorted(EXPECTED))


def test_schema_and_service():
    doc = load()
    assert doc["shipyard"] == 3
    assert doc["service"] == EXPECTED["service"]


def test_hull():
    assert load()["hull"] == EXPECTED["hull"]


def test_docks_tides_beacons():
    doc = load()
    assert doc["docks"] == EXPECTED["docks"]
    assert doc["tides"] == EXPECTED["tides"]
    assert doc["beacons"] == EXPECTED["beacons"]
