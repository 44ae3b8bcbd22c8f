from pathlib import Path

import yaml

EXPECTED = {
    "shipyard": 3,
    "service": {"name": "fleet-tracker", "crew": "crew-logistics", "tier": "t2"},
    "hull": {
        "image": "harbor.corp.internal/logistics/fleet-tracker:7.2.0",
        "berths": 3,
        "cargo": {"cpu": "1500m", "mem": "2048Mi"},
    },
    "docks": [{"name": "main", "dock": 8080, "proto": "tcp"}],
    "tides": {"mode": "rolling", "swell": "25%"},
    "beacons": {"ready": "/__ready", "live": "/__live", "grace": "40s"},
    "lockers": [
        {"env": "MAPS_API_KEY", "ref": "vault://logistics/fleet-tracker/maps-api-key"},
        {"env": "REDIS_URL", "ref": "vault://logistics/fleet-tracker/redis-url"},
    ],
}


def load():
    path = Path("shipyard.yaml")
    assert path.is_file(), "shipyard.yaml is missing"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), "shipyard.yaml must be a YAML mapping"
    return doc


def test_no_schema2_keys_left():
    doc = load()
    stale = {"version", "name", "owner", "tier", "image", "replicas", "resources", "ports",
             "rollout", "health", "secrets"} & set(doc)
    assert not stale, f"schema 2 keys still present: {sorted(stale)}"


def test_top_level_keys():
    assert set(load()) == set(EXPECTED)


def test_service_and_hull():
    doc = load()
    assert doc["shipyard"] == 3
    assert doc["service"] == EXPECTED["service"]
    assert doc["hull"] == EXPECTED["hull"]


def test_docks_tides_beacons():
    doc = load()
    assert doc["docks"] == EXPECTED["docks"]
    assert doc["tides"] == EXPECTED["tides"]
    assert doc["beacons"] == EXPECTED["beacons"]


def test_lockers():
    assert load()["lockers"] == EXPECTED["lockers"]
