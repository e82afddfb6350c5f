#!/usr/bin/env bash
# `npm run test:chaos [-- --duration <seconds> --seed <n>]`: the chaos run. Builds or reuses the
# control-plane binaries (test/k8s/build.sh) and the daemon's bundle (npm run build: the daemon
# runs as the image runs it), then runs vitest with vitest.chaos.config.ts. Other arguments go to
# vitest (a reporter, say). Without a Go toolchain or module proxy the run is skipped with one
# explicit line; any other failure fails. VK_CHAOS_KEEP=1 keeps the run directory of a passing run.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"

passthrough=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) export VK_CHAOS_DURATION_S="$2"; shift 2 ;;
    --duration=*) export VK_CHAOS_DURATION_S="${1#*=}"; shift ;;
    --seed) export VK_CHAOS_SEED="$2"; shift 2 ;;
    --seed=*) export VK_CHAOS_SEED="${1#*=}"; shift ;;
    --settle) export VK_CHAOS_SETTLE_S="$2"; shift 2 ;;
    --settle=*) export VK_CHAOS_SETTLE_S="${1#*=}"; shift ;;
    *) passthrough+=("$1"); shift ;;
  esac
done

. test/k8s/run-lib.sh
k8s_binaries "chaos run"

npm run --silent build >/dev/null || { echo "chaos run: npm run build failed" >&2; exit 1; }

# Every process group the control plane starts is recorded here, and every daemon's pid, so none
# outlives this script whatever way vitest ends.
state=$(mktemp -d "${TMPDIR:-/tmp}/vk-chaos-state.XXXXXX")
export VK_K8S_STATE="$state"
cleanup() {
  stop_vitest
  kill_recorded "$state/pgids" group
  kill_recorded "$state/pids" pid
  rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

vitest_awaited --config vitest.chaos.config.ts "${passthrough[@]}"
