# Sourced by test/k8s/run.sh and test/chaos/run.sh: the last-resort kill of what a run recorded.
# `kill_recorded FILE group|pid` reads lines `id starttime` (test/k8s/fixture/Processes.ts writes
# them) and SIGKILLs only what is still the process recorded: a pid is reused once its process has
# gone (32768 of them on a busy machine), and a bare recorded pid once killed a stranger.
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
