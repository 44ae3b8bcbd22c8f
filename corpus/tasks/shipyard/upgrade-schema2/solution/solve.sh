#!/usr/bin/env bash
set -eu
cat > shipyard.yaml <<'YAML'
shipyard: 3
service:
  name: fleet-tracker
  crew: crew-logistics
  tier: t2
hull:
  image: harbor.corp.internal/logistics/fleet-tracker:7.2.0
  berths: 3
  cargo:
    cpu: "1500m"
    mem: "2048Mi"
docks:
  - name: main
    dock: 8080
    proto: tcp
tides:
  mode: rolling
  swell: "25%"
beacons:
  ready: /__ready
  live: /__live
  grace: "40s"
lockers:
  - env: MAPS_API_KEY
    ref: vault://logistics/fleet-tracker/maps-api-key
  - env: REDIS_URL
    ref: vault://logistics/fleet-tracker/redis-url
YAML
