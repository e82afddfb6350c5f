#!/usr/bin/env bash
# Installs Debian's `prometheus` package (promtool and prometheus) for test/Monitoring/ when they
# are absent: CI starts on a machine without them. The tests start their own prometheus process
# with their own config and data directory on loopback; the package's service is kept from
# starting (policy-rc.d) and is never used.
set -uo pipefail
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
  echo "prometheus: $(prometheus --version 2>&1 | head -n 1)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "prometheus: not installed and no apt-get here; the monitoring tests fail under CI"
  exit 0
fi
log=$(mktemp)
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && own_policy=1
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq >"$log" 2>&1 && apt-get install -y -qq --no-install-recommends prometheus >>"$log" 2>&1; then
  echo "prometheus: installed $(prometheus --version 2>&1 | head -n 1)"
else
  echo "prometheus: apt-get install failed; the monitoring tests fail under CI:"
  tail -n 20 "$log"
fi
[ "$own_policy" -eq 1 ] && rm -f "$policy"
rm -f "$log"
exit 0
