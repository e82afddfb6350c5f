#!/usr/bin/env bash
# `npm run image`: builds the image from the Dockerfile as shipped, on a machine with a Docker
# engine and the package registries but no image registry, and prints the image reference on its
# last line (everything else goes to stderr).
#
# The build base is the stand-in packaging/image/build-base.sh makes (cached), unless
# VK_BUILD_BASE names one (e.g. the Dockerfile's own default, where a registry is reachable: "default").
# Docker's classic builder (DOCKER_BUILDKIT=0), with host networking: the engine here has no bridge.
# The tag is the commit (with -dirty when the work tree differs from it); REVISION, VERSION and
# BUILT_AT are passed as a release build passes them (docs/installation.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
say() { echo "image: $*" >&2; }

docker info >/dev/null 2>&1 || { say "no Docker engine answers (docker info failed); .ci/docker.sh start starts one"; exit 1; }

base=${VK_BUILD_BASE:-}
base_args=()
if [ -z "$base" ]; then
  base=$(bash packaging/image/build-base.sh | tail -n 1)
fi
[ "$base" = "default" ] || base_args=(--build-arg "BUILD_BASE=$base")

revision=${VK_IMAGE_REVISION:-$(git rev-parse HEAD)}
tag=${revision:0:12}
if [ -z "${VK_IMAGE_REVISION:-}" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  revision="$revision-dirty"
  tag="$tag-dirty"
fi
version=$(node_modules/.bin/node -p 'require("./package.json").version')
built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ref="${VK_IMAGE_NAME:-vk-sandbox}:$tag"

say "building $ref on $base"
started=$(date +%s)
DOCKER_BUILDKIT=0 docker build --network host \
  "${base_args[@]}" \
  --build-arg "REVISION=$revision" \
  --build-arg "VERSION=$version" \
  --build-arg "BUILT_AT=$built_at" \
  -t "$ref" . >&2
say "built $ref in $(( $(date +%s) - started )) s"
echo "$ref"
