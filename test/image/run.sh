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
bin=$(bash test/k8s/build.sh 2>/tmp/vk-image-helm-build.log)
status=$?
last_line=$(printf '%s\n' "$bin" | tail -n 1)
case $status in
  0) ;;
  2 | 3) echo "image tests: SKIPPED (helm could not be built: $last_line)"; exit 0 ;;
  *) echo "image tests: building helm failed (exit $status)"; tail -n 20 /tmp/vk-image-helm-build.log; exit "$status" ;;
esac
export VK_HELM_BIN="$last_line/helm"

if [ -z "${VK_IMAGE:-}" ]; then
  VK_IMAGE=$(bash packaging/image/build.sh | tail -n 1) || { echo "image tests: npm run image failed"; exit 1; }
fi
export VK_IMAGE
echo "image tests: $VK_IMAGE"
vitest run --config vitest.image.config.ts "$@"
