#!/usr/bin/env bash
# `npm run test:image`: the container tests (vitest.image.config.ts) on the image `VK_IMAGE`
# names, or on the one `npm run image` builds (cached: a warm build only restamps it). helm, to
# render the chart the tests run, comes from test/k8s/build.sh (as for the chart checks): without
# a Go toolchain or module proxy the tests are skipped with one line. Without a Docker engine
# they fail (`bash .ci/docker.sh start` starts one).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"

docker info >/dev/null 2>&1 || { echo "image tests: no Docker engine answers (bash .ci/docker.sh start starts one)"; exit 1; }
. test/k8s/run-lib.sh
k8s_binaries "image tests" helm "${TMPDIR:-/tmp}/vk-image-helm-build.log"
export VK_HELM_BIN="$VK_K8S_BIN/helm"

if [ -z "${VK_IMAGE:-}" ]; then
  VK_IMAGE=$(bash packaging/image/build.sh | tail -n 1) || { echo "image tests: npm run image failed"; exit 1; }
fi
export VK_IMAGE
echo "image tests: $VK_IMAGE"
vitest run --config vitest.image.config.ts "$@"
