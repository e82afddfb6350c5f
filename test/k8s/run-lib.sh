# Sourced by the run scripts of the k8s, chaos and image suites: the steps they share.
# `k8s_binaries LABEL [WHAT LOG]` builds or reuses the pinned binaries (test/k8s/build.sh) and
# exports VK_K8S_BIN, or ends the script: SKIPPED without a Go toolchain or proxy, failed else.
# `vitest_awaited ARGS...` runs vitest in the background and waits, so a signal is handled at once.
# `kill_recorded FILE group|pid` SIGKILLs only what is still the run's (a pid is reused once its
# process has gone, and a bare recorded pid once killed a stranger).

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

# Lines `id starttime`, as test/k8s/fixture/Processes.ts writes them in the state directory the
# run exported as VK_K8S_STATE (every process the run starts carries it). Linux only (/proc).
kill_recorded() {
  local file=$1 kind=$2 run_state id start now member
  [ -f "$file" ] || return 0
  run_state=$(dirname "$file")
  while read -r id start; do
    [ -z "$id" ] && continue
    now=$(sed 's/.*) //' "/proc/$id/stat" 2>/dev/null | cut -d ' ' -f 20)
    if [ -n "$now" ] && [ "$now" = "$start" ]; then
      if [ "$kind" = group ]; then kill -KILL -- "-$id" 2>/dev/null; else kill -KILL "$id" 2>/dev/null; fi
    elif [ "$kind" = group ] && [ -z "$now" ] && kill -0 -- "-$id" 2>/dev/null; then
      # The leader is gone but the group is not. Once the whole group went too its id may be
      # another's group now: only members that carry this run's state directory are killed.
      for member in $(group_members "$id"); do
        if grep -qzxF "VK_K8S_STATE=$run_state" "/proc/$member/environ" 2>/dev/null; then
          kill -KILL "$member" 2>/dev/null
        fi
      done
    fi
  done < "$file"
}

# The pids whose process group is $1 (field 5 of /proc/<pid>/stat, 3 after the command's ")").
group_members() {
  local stat pid
  for stat in /proc/[0-9]*/stat; do
    pid=${stat#/proc/}; pid=${pid%/stat}
    [ "$(sed 's/.*) //' "$stat" 2>/dev/null | cut -d ' ' -f 3)" = "$1" ] && echo "$pid"
  done
}
