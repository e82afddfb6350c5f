#!/usr/bin/env bash
# The Docker engine for CI's image stage (`.ci/run`): `start` and `stop`.
# start: when no engine answers, installs Debian's docker.io (and debootstrap, which the stand-in
#   build base needs) if missing, and starts dockerd with no bridge network and no iptables rules
#   (every build and container uses host networking); waits until it answers.
# stop: stops the dockerd that `start` started (by its pid), and only that one.
set -uo pipefail
state=${VK_CI_DOCKER_STATE:-/tmp/vk-ci-docker}
mkdir -p "$state"

say() { echo "docker: $*"; }

install_missing() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  [ "${#missing[@]}" -eq 0 ] && return 0
  say "installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  # The package's scripts must not start a dockerd of their own (with a bridge and iptables
  # rules): Debian's policy-rc.d answer 101 forbids it for the time of the install.
  local policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
  fi
  apt-get update -qq >"$state/apt.log" 2>&1 \
    && apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$state/apt.log" 2>&1
  local status=$?
  [ -n "$policy" ] && rm -f "$policy"
  [ "$status" -eq 0 ] || { tail -n 20 "$state/apt.log"; say "apt-get install ${missing[*]} failed"; return 1; }
}

start() {
  install_missing || return 1
  if docker info >/dev/null 2>&1; then
    say "an engine already answers; using it (and leaving it running)"
    rm -f "$state/pid"
    return 0
  fi
  say "starting dockerd --bridge=none --iptables=false"
  dockerd --bridge=none --iptables=false --ip6tables=false >"$state/dockerd.log" 2>&1 &
  echo $! >"$state/pid"
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && { say "dockerd $(cat "$state/pid") answers"; return 0; }
    kill -0 "$(cat "$state/pid")" 2>/dev/null || break
    sleep 0.5
  done
  tail -n 30 "$state/dockerd.log"
  say "dockerd did not come up"
  return 1
}

stop() {
  [ -f "$state/pid" ] || return 0
  local pid
  pid=$(cat "$state/pid")
  rm -f "$state/pid"
  kill -0 "$pid" 2>/dev/null || return 0
  say "stopping dockerd $pid"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  say "dockerd $pid did not stop in 30 s; killing it"
  kill -KILL "$pid" 2>/dev/null
  return 0
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
