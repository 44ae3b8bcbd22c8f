#!/usr/bin/env bash
set -eu
cat > shipyard.yaml <<'YAML'
shipyard: 3
service:
  name: quote-engine
  crew: crew-pricing
  tier: t2
hull:
  image: harbor.corp.internal/pricing/quote-engine:3.1.4
  berths: 2
  cargo:
    cpu: "750m"
    mem: "1536Mi"
docks:
  - name: main
    dock: 8443
    proto: tcp
tides:
  mode: rolling
  swell: "25%"
beacons:
  ready: /__ready
  live: /__live
  grace: "30s"
YAML
