#!/usr/bin/env bash
# Chart checks: a Kubernetes older than the chart's kubeVersion is refused; helm lint --strict
# and helm template (for Kubernetes 1.30) for every ci/*-values.yaml (ci/host-file-values.yaml is
# the bare defaults, ci/default-values.yaml the defaults plus a token); then tests over the
# rendered manifests (which feed the container's args and env to the
# daemon's own CLI parser) and over renders of their own (VK_HELM_BIN). helm is built from Go
# modules by test/k8s/build.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
chart=deploy/helm/vk-sandbox

bin_dir=$(bash test/k8s/build.sh 2>/tmp/vk-helm-build.log | tail -n 1)
helm="$bin_dir/helm"
if [ ! -x "$helm" ]; then
  echo "chart checks: SKIPPED (helm could not be built: $(tail -n 1 /tmp/vk-helm-build.log 2>/dev/null))"
  exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
# The chart needs Kubernetes 1.30 (the admission policy, node-bound tokens): an older one is refused.
if "$helm" template vk-sandbox "$chart" --namespace vk-sandbox --kube-version 1.29.0 >"$out/old.out" 2>&1; then
  echo "helm template for Kubernetes 1.29 rendered; the chart's kubeVersion must refuse it"; status=1
else
  echo "helm template: Kubernetes 1.29 refused (kubeVersion) ok"
fi
for values in $chart/ci/*-values.yaml; do
  name=$(basename "$values" -values.yaml)
  args=(-f "$values")
  if ! "$helm" lint --strict --kube-version 1.30.0 "$chart" "${args[@]}" >"$out/$name.lint" 2>&1; then
    echo "helm lint --strict failed for $name:"; cat "$out/$name.lint"; status=1
  else
    echo "helm lint --strict: $name ok"
  fi
  if ! "$helm" template vk-sandbox "$chart" --namespace vk-sandbox --kube-version 1.30.0 "${args[@]}" >"$out/$name.yaml" 2>"$out/$name.err"; then
    echo "helm template failed for $name:"; cat "$out/$name.err"; status=1
  else
    echo "helm template: $name ok"
  fi
done
[ "$status" -eq 0 ] || exit "$status"

export VK_HELM_RENDER_DIR="$out"
export VK_HELM_BIN="$helm"
PATH="$PWD/node_modules/.bin:$PATH" vitest run --config vitest.helm.config.ts "$@"
