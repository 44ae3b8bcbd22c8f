from pathlib import Path

import yaml

EXPECTED = {
    "shipyard": 3,
    "service": {"name": "quote-engine", "crew": "crew-pricing", "tier": "t2"},
    "hull": {
        "image": "harbor.corp.internal/pricing/quote-engine:3.1.4",
        "berths": 2,
        "cargo": {"cpu": "750m", "mem": "1536Mi"},
    },
    "docks": [{"name": "main", "dock": 8443, "proto": "tcp"}],
    "tides": {"mode": "rolling", "swell": "25%"},
    "beacons": {"ready": "/__ready", "live": "/__live", "grace": "30s"},
}


def load():
    path = Path("shipyard.yaml")
    assert path.is_file(), "shipyard.yaml is missing"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), "shipyard.yaml must be a YAML mapping"
    return doc


def test_top_level_keys():
    assert set(load()) == set(EXPECTED)


def test_service():
    assert load()["service"] == EXPECTED["service"]


def test_hull():
    assert load()["hull"] == EXPECTED["hull"]


def test_docks():
    assert load()["docks"] == EXPECTED["docks"]


def test_tides_and_beacons():
    doc = load()
    assert doc["tides"] == EXPECTED["tides"]
    assert doc["beacons"] == EXPECTED["beacons"]
