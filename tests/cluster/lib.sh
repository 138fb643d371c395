# Process helpers shared by up.sh / down.sh / s3.sh (sourced after env.sh).
# Every component runs detached (setsid), logs to $TB/logs/<name>.log, and is known ONLY by the PID in
# $TB/pids/<name>.pid (+ its executable in <name>.exe, so a recycled PID is never mistaken for it).
# Nothing here ever kills by name: other etcd/cargo processes run on this machine.
LOGS=$TB/logs
PIDS=$TB/pids

# pid_of NAME — prints the PID if the recorded process is alive and still the same executable.
pid_of() {
  local name=$1 pid exe
  [ -s "$PIDS/$name.pid" ] || return 1
  pid=$(cat "$PIDS/$name.pid")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && return 1
  if [ -s "$PIDS/$name.exe" ]; then
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    [ "$exe" = "$(cat "$PIDS/$name.exe")" ] || return 1
  fi
  echo "$pid"
}

alive() { pid_of "$1" >/dev/null; }

# start NAME CMD... — start CMD detached unless NAME is already running.
start() {
  local name=$1; shift
  mkdir -p "$LOGS" "$PIDS"
  if alive "$name"; then log "$name already running (pid $(pid_of "$name"))"; return 0; fi
  printf '\n===== %s start: %s\n' "$(date '+%F %T')" "$*" >> "$LOGS/$name.log"
  # In a non-interactive shell the background child is not a process-group leader, so setsid execs
  # in place and $! is the component's own PID.
  setsid "$@" >> "$LOGS/$name.log" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$PIDS/$name.pid"
  # the executable the PID must run (setsid execs it; scripts run as their interpreter)
  local exe; exe=$(readlink -f "$(command -v "$1")")
  case "$(head -c2 "$exe" 2>/dev/null)" in '#!') exe=$(readlink -f "$(command -v bash)") ;; esac
  echo "$exe" > "$PIDS/$name.exe"
  local i
  for ((i = 0; i < 50; i++)); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && return 0
    [ -d "/proc/$pid" ] || return 0   # died at once: wait_for reports it with the log
    sleep 0.05
  done
}

# stop NAME [TIMEOUT] — SIGTERM the recorded PID, wait, SIGKILL after TIMEOUT seconds.
stop() {
  local name=$1 timeout=${2:-15} pid i
  if pid=$(pid_of "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout * 10; i++)); do alive "$name" || break; sleep 0.1; done
    if alive "$name"; then log "$name (pid $pid) did not stop in ${timeout}s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; sleep 0.3; fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$PIDS/$name.pid" "$PIDS/$name.exe"
}

logtail() { echo "----- last lines of $LOGS/$1.log -----" >&2; tail -n "${2:-40}" "$LOGS/$1.log" >&2 2>/dev/null || true; }

# wait_for NAME TIMEOUT CHECK... — wait until CHECK succeeds; fail early if NAME's process died.
wait_for() {
  local name=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  while :; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [ -n "$name" ] && [ -e "$PIDS/$name.pid" ] && ! alive "$name"; then
      logtail "$name"; die "$name exited while starting"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      [ -n "$name" ] && logtail "$name"
      die "${name:-check} not healthy after ${timeout}s ($*)"
    fi
    sleep 0.3
  done
}
