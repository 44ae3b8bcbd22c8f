from pathlib import Path

import yaml

EXPECTED = {
    "shipyard": 3,
    "service": {"name": "risk-scorer", "crew": "crew-fraud", "tier": "t1"},
    "hull": {
        "image": "harbor.corp.internal/fraud/risk-scorer:0.9.3",
        "berths": 4,
        "cargo": {"cpu": "1000m", "mem": "2048Mi"},
    },
    "docks": [
        {"name": "main", "dock": 7443, "proto": "tcp"},
        {"name": "metrics", "dock": 9102, "proto": "tcp"},
    ],
    "tides": {"mode": "canary", "swell": "10%"},
    "beacons": {"ready": "/__ready", "live": "/__live", "grace": "60s"},
    "lockers": [
        {"env": "DB_PASSWORD", "ref": "vault://fraud/risk-scorer/db-password"},
        {"env": "MODEL_BUCKET_TOKEN", "ref": "vault://fraud/risk-scorer/model-bucket-token"},
    ],
}


def load():
    path = Path("shipyard.yaml")
    assert path.is_file(), "shipyard.yaml is missing from the workspace root"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), "shipyard.yaml must be a YAML mapping"
    return doc


def test_top_level_keys():
    assert set(load()) == set(EXPECTED)


def test_service():
    doc = load()
    assert doc["shipyard"] == 3
    assert doc["service"] == EXPECTED["service"]


def test_hull_uses_tier_defaults():
    assert load()["hull"] == EXPECTED["hull"]


def test_docks_include_metrics_for_t1():
    assert load()["docks"] == EXPECTED["docks"]


def test_tier_rollout_and_beacons():
    doc = load()
    assert doc["tides"] == EXPECTED["tides"]
    assert doc["beacons"] == EXPECTED["beacons"]


def test_lockers():
    assert load()["lockers"] == EXPECTED["lockers"]
