#!/usr/bin/env bash
set -eu
f=runbooks/search-gw.md
sed -i \
  -e 's/^### Restart the query pods$/### M1 Restart the query pods [safe]/' \
  -e 's/^### Flush the result cache$/### M2 Flush the result cache [safe]/' \
  -e 's/^### Fail over to the secondary region$/### M3 Fail over to the secondary region [risky]/' \
  -e 's/^### Purge stale index shards$/### M4 Purge stale index shards [risky]/' \
  -e 's/^### Scale out the query tier$/### M5 Scale out the query tier [safe]/' \
  "$f"
