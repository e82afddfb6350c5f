#!/usr/bin/env bash
# Writes deploy/admission/node-restriction.yaml: the chart's node-restriction policy rendered for
# the release vk-sandbox in the namespace vk-sandbox with the chart's defaults, without Helm's
# labels and the chart's own header comment, under the plain manifest's header (kept from the
# file). test/helm/chart.test.ts fails when the two differ; run this after changing the policy:
#   bash test/helm/plain-policy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
file=deploy/admission/node-restriction.yaml
bin_dir=$(bash test/k8s/build.sh 2>/dev/null | tail -n 1)
header=$(awk '/^apiVersion:/ { exit } { print }' "$file")
body=$("$bin_dir/helm" template vk-sandbox deploy/helm/vk-sandbox --namespace vk-sandbox --kube-version 1.30.0 \
  --show-only templates/admission-policy.yaml |
  awk '
    /^# Source: / { next }
    /^---$/ && !started { next }
    /^apiVersion:/ { started = 1 }
    !started { next }
    /^  labels:$/ { skipping = 1; next }
    skipping && /^    / { next }
    { skipping = 0; print }
  ')
printf '%s\n%s\n' "$header" "$body" > "$file"
echo "wrote $file"
