#!/usr/bin/env bash
set -eu
cat > shipyard.yaml <<'YAML'
shipyard: 3
service:
  name: ledger-sync
  crew: crew-payments
  tier: t2
hull:
  image: harbor.corp.internal/payments/ledger-sync:2.14.0
  berths: 3
  cargo:
    cpu: "500m"
    mem: "1024Mi"
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
  grace: "45s"
YAML
