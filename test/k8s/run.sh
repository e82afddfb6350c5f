#!/usr/bin/env bash
# `npm run test:k8s`: the real-apiserver suite. Builds or reuses kube-apiserver, etcd and helm
# (test/k8s/build.sh), then runs vitest with vitest.k8s.config.ts, whose global setup starts the
# control plane on loopback. Without a Go toolchain or module proxy the suite is skipped with one
# explicit line; any other failure, of the build or of the suite, fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"

. test/k8s/run-lib.sh
k8s_binaries "k8s suite"

# The image the real-node scenarios install with the chart (test/k8s/cluster/RealNode.test.ts):
# `npm run image` builds it (a Docker engine must answer) and prints its reference last. If that
# fails, those scenarios fail with its last line and the rest of the suite still runs.
if [ -z "${VK_K8S_IMAGE:-}" ]; then
  if image_out=$(npm run --silent image 2>"${TMPDIR:-/tmp}/vk-k8s-image.log"); then
    VK_K8S_IMAGE=$(printf '%s\n' "$image_out" | tail -n 1)
    export VK_K8S_IMAGE
  else
    VK_K8S_IMAGE_ERROR="npm run image failed: $(tail -n 1 "${TMPDIR:-/tmp}/vk-k8s-image.log")"
    export VK_K8S_IMAGE_ERROR
  fi
fi

# The global setup records the process groups it starts here; whatever way vitest ends, none of
# them outlives this script.
state=$(mktemp -d "${TMPDIR:-/tmp}/vk-k8s.XXXXXX")
export VK_K8S_STATE="$state"
cleanup() {
  stop_vitest
  kill_recorded "$state/pgids" group
  # A real node's containers outlive a killed vitest: their shims (started by the node's
  # containerd, whose socket is under $state, in a process group of their own) and what they run;
  # then whatever stayed mounted there.
  for shim in $(pgrep -f -- "-address $state/" 2>/dev/null); do
    pkill -KILL -P "$shim" 2>/dev/null
    kill -KILL "$shim" 2>/dev/null
  done
  grep -F " $state/" /proc/self/mountinfo 2>/dev/null | awk '{ print $5 }' | sort -r | xargs -r -n 1 umount --lazy 2>/dev/null
  # The kubelet's container log links, a fixed directory of the machine, into the state directory.
  find /var/log/containers -maxdepth 1 -lname "$state/*" -delete 2>/dev/null
  if [ -z "${VK_K8S_KEEP_STATE:-}" ]; then rm -rf "$state"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

vitest_awaited --config vitest.k8s.config.ts "$@"
