# Sourced by the run scripts of the k8s, chaos and image suites: the steps they share.
# `k8s_binaries LABEL [WHAT LOG]` builds or reuses the pinned binaries (test/k8s/build.sh) and
# exports VK_K8S_BIN, or ends the script: SKIPPED without a Go toolchain or proxy, failed else.
# `vitest_awaited ARGS...` runs vitest in the background and waits, so a signal is handled at once.
# `kill_recorded FILE group|pid` SIGKILLs only what is still the process recorded (a pid is reused
# once its process has gone, and a bare recorded pid once killed a stranger).

k8s_binaries() {
  local label=$1 what=${2:-the control-plane binaries} log=${3:-} out status last
  if [ -n "$log" ]; then out=$(bash test/k8s/build.sh 2>"$log"); else out=$(bash test/k8s/build.sh); fi
  status=$?
  last=$(printf '%s\n' "$out" | tail -n 1)
  case $status in
    0) VK_K8S_BIN=$last; export VK_K8S_BIN ;;
    2 | 3) echo "$label: SKIPPED ($what could not be built: $last)"; exit 0 ;;
    *)
      echo "$label: building $what failed (exit $status)" >&2
      if [ -n "$log" ]; then tail -n 20 "$log" >&2; fi
      exit "$status" ;;
  esac
}

# bash defers traps until a foreground command ends; a waited background job lets them run.
vitest_pid=""
vitest_awaited() {
  local status
  vitest run "$@" &
  vitest_pid=$!
  wait "$vitest_pid"
  status=$?
  vitest_pid=""
  return "$status"
}

stop_vitest() {
  if [ -n "$vitest_pid" ]; then kill -TERM "$vitest_pid" 2>/dev/null; fi
}

# Lines `id starttime`, as test/k8s/fixture/Processes.ts writes them.
kill_recorded() {
  local file=$1 kind=$2 id start now
  [ -f "$file" ] || return 0
  while read -r id start; do
    [ -z "$id" ] && continue
    now=$(sed 's/.*) //' "/proc/$id/stat" 2>/dev/null | cut -d ' ' -f 20)
    if [ "$kind" = group ]; then
      # No process has the id while the group lives on without its leader: the group is ours.
      if [ -z "$now" ] || [ "$now" = "$start" ]; then kill -KILL -- "-$id" 2>/dev/null; fi
    elif [ -n "$now" ] && [ "$now" = "$start" ]; then
      kill -KILL "$id" 2>/dev/null
    fi
  done < "$file"
}
