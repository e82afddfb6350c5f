#!/usr/bin/env bash
# Builds (or reuses) the real Kubernetes binaries for the k8s suite: kube-apiserver,
# kube-scheduler, kube-controller-manager, kubelet, kubectl and etcd from test/k8s/tools, helm from
# test/k8s/tools/helm. The five Kubernetes binaries come from one `go build`, so the packages they
# share compile once. Versions are pinned by those modules' go.mod
# and go.sum, so a build resolves nothing new. Binaries land in a cache outside the repository,
# keyed by the pinned versions and a hash of the module files:
#   ${VK_K8S_CACHE:-$HOME/.cache/vk-sandbox/k8s/<key>}/bin/{kube-apiserver,kube-scheduler,kube-controller-manager,kubelet,kubectl,etcd,pause,helm}
# The last stdout line is that bin directory; on exit 2 or 3 it is the reason instead.
# Exit codes: 0 built or reused; 2 no Go toolchain; 3 module proxy unavailable; 1 build failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/tools"

# The version a go.mod requires of a module (one-line or block form of `require`).
pinned() { awk -v module="$1" '{ for (i = 1; i < NF; i++) if ($i == module) { print $(i + 1); exit } }' "$2"; }
kube_version=$(pinned k8s.io/kubernetes "$tools/go.mod")
etcd_version=$(pinned go.etcd.io/etcd/server/v3 "$tools/go.mod")
helm_version=$(pinned helm.sh/helm/v3 "$tools/helm/go.mod")
files_hash=$(cat "$here/build.sh" "$tools/go.mod" "$tools/go.sum" "$tools/cmd/etcd/main.go" "$tools/cmd/pause/main.go" "$tools/helm/go.mod" "$tools/helm/go.sum" | sha256sum | cut -c1-12)
key="kube-${kube_version}_etcd-${etcd_version}_helm-${helm_version}_${files_hash}"
root="${VK_K8S_CACHE:-$HOME/.cache/vk-sandbox/k8s/$key}"
bin="$root/bin"

have_all() {
  for name in kube-apiserver kube-scheduler kube-controller-manager kubelet kubectl etcd pause helm; do
    [ -x "$bin/$name" ] || return 1
  done
}

if have_all; then
  echo "k8s binaries: reusing $key" >&2
  echo "$bin"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "no Go toolchain on PATH"
  exit 2
fi

# -buildvcs=false: the stamp would depend on the checkout (and on git being usable there).
export GOFLAGS="-mod=mod -buildvcs=false"
# Fetch every pinned module first, so an unreachable proxy is told apart from a failing build.
for module in "$tools" "$tools/helm"; do
  if ! out=$(cd "$module" && go mod download 2>&1); then
    echo "Go module proxy unavailable: $(printf '%s\n' "$out" | tail -n 1)"
    exit 3
  fi
done

echo "k8s binaries: building $key with $(go env GOVERSION) (the first build takes many minutes)" >&2
mkdir -p "$root"
staging=$(mktemp -d "$root/build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
start=$(date +%s)
# The version stamp kube-apiserver reports (/version); without it a module build says v0.0.0-master.
kube_minor=$(printf '%s' "$kube_version" | cut -d. -f2)
stamp="-X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1"
stamp="$stamp -X k8s.io/component-base/version.gitMinor=$kube_minor -X k8s.io/component-base/version.gitTreeState=clean"
(cd "$tools" && go build -trimpath -ldflags="-s -w $stamp" -o "$staging/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl ./cmd/etcd ./cmd/pause) >&2
(cd "$tools/helm" && go build -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version" \
  -o "$staging/" helm.sh/helm/v3/cmd/helm) >&2
rm -rf "$bin"
mv "$staging" "$bin"
trap - EXIT
echo "k8s binaries: built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
