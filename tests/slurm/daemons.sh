# shellcheck shell=bash disable=SC2154  # `dir` comes from the sourcing script
# Shared by the test clusters (tests/slurm/cluster.sh, one node on localhost;
# tests/cluster/cluster.sh, four nodes in namespaces). Sourced, not executed.
# Expects `dir` (the cluster's state directory) and defines die/skip when the
# caller has not.
declare -F die >/dev/null || die() { echo "${0##*/}: $*" >&2; exit 1; }
declare -F skip >/dev/null || skip() { echo "${0##*/}: SKIP: $*" >&2; exit 77; }

# A free TCP port on address $1 (default 127.0.0.1): bind to port 0, read
# what the kernel chose.
free_port() {
  /usr/bin/python3 - "${1:-127.0.0.1}" <<'PY'
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 0))
print(s.getsockname()[1])
s.close()
PY
}

# Installs slurm-wlm, munge and python3-h5py when missing (exit 77 when they
# cannot be installed), plus the Debian packages named as arguments when
# their command ($pkg:$command pairs) is missing.
ensure_packages() {
  local missing=() pair
  command -v slurmctld >/dev/null 2>&1 || missing+=(slurm-wlm)
  command -v slurmd >/dev/null 2>&1 || missing+=(slurm-wlm)
  command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
  [[ -x /usr/sbin/munged ]] || missing+=(munge)
  # The tests read run files with Debian's h5py (check_run.py).
  /usr/bin/python3 -c 'import h5py' >/dev/null 2>&1 || missing+=(python3-h5py)
  for pair in "$@"; do
    command -v "${pair#*:}" >/dev/null 2>&1 || missing+=("${pair%%:*}")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then return 0; fi
  command -v apt-get >/dev/null 2>&1 || skip "missing ${missing[*]} and no apt-get to install them"
  echo "${0##*/}: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get install -y --no-install-recommends "${missing[@]}" >"$dir/apt.log" 2>&1 ||
         { apt-get update >>"$dir/apt.log" 2>&1 &&
           apt-get install -y --no-install-recommends "${missing[@]}" >>"$dir/apt.log" 2>&1; }; }; then
    skip "could not install ${missing[*]} (see $dir/apt.log)"
  fi
}

wait_for_file() {  # path, seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -e "$1" ]] && return 0
    sleep 0.1
  done
  return 1
}

# The process is ours and alive (guards against a recycled PID).
pid_alive() {
  local pid="$1" exe="$2"
  [[ -n "$pid" && -d "/proc/$pid" ]] || return 1
  [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$exe" ]]
}

# Starts munged with a private key and socket; records it in $dir/pids.
# Sets `munge_socket`. The socket lives in $1 (made here, mode 0755: munged
# refuses a group/world-writable directory).
start_munged() {
  local sock_dir="$1"
  mkdir -p "$dir/munge" "$sock_dir" "$dir/log"
  chmod 0700 "$dir/munge"
  chmod 0755 "$sock_dir"
  munge_socket="$sock_dir/munge.socket"
  rm -f "$munge_socket" "$munge_socket.lock"
  # munged: private key, socket, pid, log and seed; foreground so $! is its PID.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  setsid /usr/sbin/munged --foreground --force \
    --socket="$munge_socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munge.seed" </dev/null >"$dir/log/munged.out" 2>&1 &
  echo "munged $! $(readlink -f /usr/sbin/munged)" >>"$dir/pids"
  echo "$sock_dir" >"$dir/sock_dir"
  wait_for_file "$munge_socket" 10 || { cat "$dir/log/munged.out" >&2; die "munged did not create $munge_socket"; }
}

# Stops the process recorded on one line of $dir/pids ("name pid exe"):
# SIGTERM, up to 10 s, then SIGKILL.
stop_recorded() {
  local name="$1" pid="$2" exe="$3" k
  pid_alive "$pid" "$exe" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((k = 0; k < 100; k++)); do pid_alive "$pid" "$exe" || break; sleep 0.1; done
  if pid_alive "$pid" "$exe"; then kill -KILL "$pid" 2>/dev/null || true; fi
  echo "${0##*/}: stopped $name (pid $pid)"
}

# Stops every process of $dir/pids in reverse order of starting (munged,
# started first, last: the others need it to shut down cleanly), then removes
# the munge socket directory when it was a private one ($1: its name pattern).
stop_all_recorded() {
  local pattern="$1"
  [[ -f "$dir/pids" ]] || return 0
  local lines=() line i name pid exe
  while IFS= read -r line; do lines+=("$line"); done <"$dir/pids"
  for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
    read -r name pid exe <<<"${lines[$i]}"
    stop_recorded "$name" "$pid" "$exe"
  done
  rm -f "$dir/pids"
  if [[ -f "$dir/sock_dir" ]]; then
    local sock_dir
    sock_dir="$(cat "$dir/sock_dir")"
    # shellcheck disable=SC2053  # a glob pattern on purpose
    [[ "$sock_dir" == $pattern ]] && rm -rf "$sock_dir"
    rm -f "$dir/sock_dir"
  fi
}
