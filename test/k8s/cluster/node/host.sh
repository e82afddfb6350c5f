#!/usr/bin/env bash
# Makes this machine able to run the real-node scenarios (test/k8s/cluster/RealNode.test.ts), as
# root on Debian, after .ci/docker.sh has installed Debian's docker.io (containerd, runc,
# containerd-shim-runc-v2) and started a Docker engine: installs the CNI loopback plugin
# (containernetworking-plugins) when missing, then checks that everything the node runs is there.
set -euo pipefail

if [ ! -x /usr/lib/cni/loopback ]; then
  echo "real node: installing containernetworking-plugins"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends containernetworking-plugins
fi
for file in /usr/bin/containerd /usr/bin/ctr /usr/sbin/runc /usr/bin/containerd-shim-runc-v2 /usr/lib/cni/loopback; do
  [ -x "$file" ] || { echo "real node: $file is missing"; exit 1; }
done
docker info >/dev/null 2>&1 || { echo "real node: no Docker engine answers (images are loaded from it)"; exit 1; }
echo "real node: containerd $(containerd --version | awk '{ print $3 }'), $(runc --version | head -n 1), CNI loopback, Docker engine: ready"
