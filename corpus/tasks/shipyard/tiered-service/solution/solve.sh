#!/usr/bin/env bash
set -eu
cat > shipyard.yaml <<'YAML'
shipyard: 3
service:
  name: risk-scorer
  crew: crew-fraud
  tier: t1
hull:
  image: harbor.corp.internal/fraud/risk-scorer:0.9.3
  berths: 4
  cargo:
    cpu: "1000m"
    mem: "2048Mi"
docks:
  - name: main
    dock: 7443
    proto: tcp
  - name: metrics
    dock: 9102
    proto: tcp
tides:
  mode: canary
  swell: "10%"
beacons:
  ready: /__ready
  live: /__live
  grace: "60s"
lockers:
  - env: DB_PASSWORD
    ref: vault://fraud/risk-scorer/db-password
  - env: MODEL_BUCKET_TOKEN
    ref: vault://fraud/risk-scorer/model-bucket-token
YAML
