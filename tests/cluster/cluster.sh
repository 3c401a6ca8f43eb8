#!/usr/bin/env bash
# shellcheck disable=SC2154  # munge_socket is set by start_munged (daemons.sh)
# A private Slurm cluster of several nodes on this one machine, for the
# `cluster` tests: every node is a slurmd in its own network, UTS, mount and
# PID namespace (hostname node1..nodeN, a private /tmp and /dev/shm, its own
# address on a private bridge), one slurmctld and one munged in the root
# namespace serve them all. The file system is shared, as on a cluster.
#
#   cluster.sh start DIR [NODES]   start munged, slurmctld and NODES slurmd
#                                  (default 4), wait until every node is idle,
#                                  write DIR/env.sh for the clients
#   cluster.sh stop DIR            stop exactly the daemons `start` recorded
#                                  (by PID), remove the namespaces and the bridge
#   cluster.sh kill-node DIR NODE  a crashed node: SIGKILL its PID 1, so its
#                                  slurmd, its step daemons and its tasks all go
#                                  at once (the network namespace stays: its
#                                  address answers with a refused connection)
#   cluster.sh start-node DIR NODE start a killed node's slurmd again
#   cluster.sh exec DIR NODE CMD...  run CMD inside the node's namespaces
#
# Exit 77 (ctest's skip code) when the cluster cannot exist here: not root,
# no network/PID namespaces, no veth/bridge, or the packages cannot be
# installed. The reason is printed; nothing is left behind.
#
# Addresses: 10.231.K.0/24 on a bridge `rtcKbr` that this script creates, K
# the first index in 0..63 whose subnet no interface or route of this machine
# uses (several build trees may run a cluster at once); the root namespace
# holds 10.231.K.254 (slurmctld listens there), node i holds 10.231.K.i. No
# route leaves the bridge: nothing outside this machine is ever addressed.
#
# Why the Slurm settings are what they are: shared/notes/field-notes.md and
# tests/slurm/cluster.sh (munged on a private socket, proctrack/linuxproc and
# task/none without cgroups, config_overrides so a node may claim more CPUs
# than the VM has). Here additionally: each node declares NODE_CPUS CPUs (the
# VM has 2 cores for 4 nodes), SlurmdTimeout is short so a killed node is
# noticed within seconds, and the node-specific files use %n.
set -euo pipefail

readonly NODE_CPUS="${RTRACE_CLUSTER_NODE_CPUS:-2}"
readonly SUBNET_PREFIX="10.231"
readonly SLURMD_TIMEOUT=10

die() { echo "cluster.sh: $*" >&2; exit 1; }
skip() { echo "cluster.sh: SKIP: $*" >&2; cleanup_partial; exit 77; }

usage() { echo "usage: cluster.sh start DIR [NODES] | stop DIR | kill-node DIR NODE | start-node DIR NODE | exec DIR NODE CMD..." >&2; exit 2; }
[[ $# -ge 2 ]] || usage
action="$1"
dir="$2"
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# shellcheck source=../slurm/daemons.sh
source "$here/../slurm/daemons.sh"

# The state of a started cluster (written by start, read by the others).
load_state() {
  [[ -f "$dir/cluster.state" ]] || die "no cluster in $dir (run \`cluster.sh start $dir\` first)"
  # shellcheck source=/dev/null
  source "$dir/cluster.state"
}

node_index() {  # node1 -> 1
  local n="${1#node}"
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 && "$n" -le "${nodes:-0}" ]] || die "no node \`$1\` in this cluster (node1..node${nodes:-0})"
  echo "$n"
}

# Removes what a failed start made (namespaces, links), so a skip or a
# failure leaves the machine as it was. Safe to call twice.
cleanup_partial() {
  [[ -n "${bridge:-}" ]] || return 0
  local i
  for ((i = 1; i <= ${nodes:-0}; i++)); do
    ip netns del "${netns_prefix}${i}" 2>/dev/null || true
    ip link del "${veth_prefix}${i}" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

# The first index K whose bridge does not exist and whose 10.231.K.0/24 is not
# in use on this machine. A lock makes the choice and the bridge's creation
# one step for concurrent clusters.
choose_subnet() {
  local k
  exec {lock_fd}>/run/lock/rtrace-cluster.lock || die "cannot open /run/lock/rtrace-cluster.lock"
  flock "$lock_fd"
  for ((k = 0; k < 64; k++)); do
    ip link show "rtc${k}br" >/dev/null 2>&1 && continue
    # Here-strings, not pipes: under pipefail a SIGPIPE'd `ip` would read as "not in use".
    grep -q "inet ${SUBNET_PREFIX}\.${k}\." <<<"$(ip -4 addr show)" && continue
    grep -q "^${SUBNET_PREFIX}\.${k}\." <<<"$(ip -4 route show)" && continue
    index="$k"
    return 0
  done
  die "no free subnet ${SUBNET_PREFIX}.0-63.0/24 (64 clusters running?)"
}

# Can this machine make namespaces, veth pairs and a bridge at all? A probe
# of each, removed again; a missing one is a skip with the reason.
probe_namespaces() {
  command -v ip >/dev/null 2>&1 || skip "no \`ip\` (Debian package iproute2)"
  command -v unshare >/dev/null 2>&1 || skip "no \`unshare\` (util-linux)"
  local probe="rtcprobe$$"
  ip netns add "$probe" 2>"$dir/probe.err" || skip "network namespaces unavailable: $(head -1 "$dir/probe.err")"
  if ! ip link add "${probe}v" type veth peer name eth0 netns "$probe" 2>"$dir/probe.err"; then
    ip netns del "$probe"
    skip "veth pairs unavailable: $(head -1 "$dir/probe.err")"
  fi
  if ! ip link add "${probe}b" type bridge 2>"$dir/probe.err"; then
    ip link del "${probe}v" 2>/dev/null || true
    ip netns del "$probe"
    skip "bridges unavailable: $(head -1 "$dir/probe.err")"
  fi
  ip link del "${probe}b" 2>/dev/null || true
  ip link del "${probe}v" 2>/dev/null || true
  if ! ip netns exec "$probe" unshare --uts --pid --mount --fork --mount-proc /bin/true 2>"$dir/probe.err"; then
    ip netns del "$probe"
    skip "UTS/PID/mount namespaces unavailable: $(head -1 "$dir/probe.err")"
  fi
  ip netns del "$probe"
  rm -f "$dir/probe.err"
}

# Starts node i's init (tests/cluster/node_init.sh) in its namespaces and
# records both the unshare process (the PID it was started with) and the
# node's PID 1 as seen from here.
start_node() {
  local i="$1" name="node$1"
  : >"$dir/log/$name.init.log"
  mkdir -p "$dir/spool/$name"
  # nsenter, not `ip netns exec`: that one mounts a sysfs of its own over
  # /sys, which hides /sys/fs/cgroup from slurmd.
  setsid nsenter --net="/run/netns/${netns_prefix}${i}" \
    unshare --uts --pid --mount --fork --mount-proc --propagation private --kill-child=SIGTERM -- \
    /bin/bash "$here/node_init.sh" "$name" "$dir/hosts" "$dir/slurm.conf" "$dir/log/$name.slurmd.out" \
    </dev/null >>"$dir/log/$name.init.log" 2>&1 &
  local unshare_pid=$! init_pid="" k
  for ((k = 0; k < 50; k++)); do
    init_pid="$(awk '{ print $1 }' "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null || true)"
    [[ -n "$init_pid" ]] && break
    sleep 0.1
  done
  [[ -n "$init_pid" ]] || { cat "$dir/log/$name.init.log" >&2; die "$name: no init process under unshare (pid $unshare_pid)"; }
  echo "$name $unshare_pid $(readlink -f /usr/bin/unshare) $init_pid $(readlink -f /bin/bash)" >>"$dir/nodes"
}

node_line() {  # prints "name unshare_pid unshare_exe init_pid init_exe" of node $1 (the last start)
  grep "^$1 " "$dir/nodes" 2>/dev/null | tail -n 1
}

wait_idle() {  # node names...; at most 60 s
  local state name i pending
  for ((i = 0; i < 600; i++)); do
    pending=()
    for name in "$@"; do
      state="$(sinfo -h -N -n "$name" -o '%T' 2>/dev/null | head -n 1 || true)"
      [[ "$state" == "idle" ]] && continue
      pending+=("$name:${state:-unknown}")
      if [[ "$state" == down* || "$state" == drain* ]]; then
        scontrol update NodeName="$name" State=RESUME >/dev/null 2>&1 || true
      fi
    done
    [[ ${#pending[@]} -eq 0 ]] && return 0
    pid_alive "$ctld_pid" "$ctld_exe" || { tail -n 20 "$dir/log/slurmctld.log" >&2 || true; die "slurmctld died during start-up"; }
    sleep 0.1
  done
  tail -n 20 "$dir/log/slurmctld.log" >&2 || true
  for name in "$@"; do tail -n 10 "$dir/log/slurmd-$name.log" "$dir/log/$name.slurmd.out" >&2 2>/dev/null || true; done
  die "nodes not idle after 60 s: ${pending[*]}"
}

start() {
  [[ "$(id -u)" -eq 0 ]] || skip "the test cluster needs root (namespaces, slurmd); not root"
  local want="${1:-4}"
  [[ "$want" =~ ^[0-9]+$ && "$want" -ge 1 && "$want" -le 16 ]] || die "NODES must be 1..16, got \`$want\`"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd -P)"
  # Every node mounts its own /tmp: the cluster's files must be elsewhere.
  # A build under /tmp (a clone there) cannot host one: skip with the way out.
  [[ "$dir/" != /tmp/* && "$dir/" != /dev/shm/* ]] ||
    skip "DIR ($dir) is under /tmp or /dev/shm, which every node mounts privately: build outside them to run the cluster tests"
  if [[ -f "$dir/cluster.state" || -f "$dir/pids" ]]; then stop || true; fi
  rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" "$dir/pids" "$dir/nodes" "$dir/env.sh"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  probe_namespaces
  ensure_packages iproute2:ip

  local started
  started="$(date +%s.%N)"
  nodes="$want"
  choose_subnet
  bridge="rtc${index}br"
  netns_prefix="rtc${index}n"
  veth_prefix="rtc${index}v"
  local net="${SUBNET_PREFIX}.${index}"
  ctl_addr="${net}.254"
  # The bridge and one veth pair per node; the node's end is its eth0.
  ip link add "$bridge" type bridge || die "cannot create bridge $bridge"
  flock -u "$lock_fd"
  cat >"$dir/cluster.state" <<EOF
nodes=$nodes
index=$index
bridge=$bridge
netns_prefix=$netns_prefix
veth_prefix=$veth_prefix
ctl_addr=$ctl_addr
EOF
  ip addr add "${ctl_addr}/24" dev "$bridge"
  ip link set "$bridge" up
  local i
  for ((i = 1; i <= nodes; i++)); do
    ip netns add "${netns_prefix}${i}"
    ip link add "${veth_prefix}${i}" type veth peer name eth0 netns "${netns_prefix}${i}"
    ip link set "${veth_prefix}${i}" master "$bridge"
    ip link set "${veth_prefix}${i}" up
    ip -n "${netns_prefix}${i}" addr add "${net}.${i}/24" dev eth0
    ip -n "${netns_prefix}${i}" link set lo up
    ip -n "${netns_prefix}${i}" link set eth0 up
  done

  # Unix sockets are limited to 107 bytes; the nodes' /tmp is their own, so a
  # short socket directory goes to /run, which every namespace shares.
  local sock_dir="$dir/munge-run"
  if [[ ${#sock_dir} -gt 80 ]]; then sock_dir="$(mktemp -d /run/rtrace-munge.XXXXXX)"; fi
  start_munged "$sock_dir"  # sets munge_socket

  local host ctld_port slurmd_port
  host="$(hostname -s)"
  ctld_port="$(free_port "$ctl_addr")"
  slurmd_port="$(free_port "$ctl_addr")"
  while [[ "$slurmd_port" == "$ctld_port" ]]; do slurmd_port="$(free_port "$ctl_addr")"; done
  {
    echo "127.0.0.1 localhost"
    echo "${ctl_addr} ${host}"
    for ((i = 1; i <= nodes; i++)); do echo "${net}.${i} node${i}"; done
  } >"$dir/hosts"

  local node_lines=""
  for ((i = 1; i <= nodes; i++)); do
    node_lines+="NodeName=node${i} NodeAddr=${net}.${i} CPUs=${NODE_CPUS} State=UNKNOWN"$'\n'
  done
  cat >"$dir/slurm.conf" <<EOF
# Generated by tests/cluster/cluster.sh: a private cluster of ${nodes} nodes in namespaces.
ClusterName=rtrace-cluster${index}
SlurmctldHost=${host}(${ctl_addr})
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=${munge_socket}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
MailProg=/bin/true
SlurmdParameters=config_overrides
StateSaveLocation=${dir}/state
SlurmdSpoolDir=${dir}/spool/%n
SlurmctldPidFile=${dir}/run/slurmctld.pid
SlurmdPidFile=${dir}/run/slurmd-%n.pid
SlurmctldLogFile=${dir}/log/slurmctld.log
SlurmdLogFile=${dir}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=${dir}/plugstack.conf
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=4
KillWait=5
InactiveLimit=0
SlurmdTimeout=${SLURMD_TIMEOUT}
MessageTimeout=5
TreeWidth=${nodes}
${node_lines}PartitionName=rtrace Nodes=node[1-${nodes}] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  : >"$dir/plugstack.conf"
  cat >"$dir/env.sh" <<EOF
export SLURM_CONF='${dir}/slurm.conf'
EOF

  export SLURM_CONF="$dir/slurm.conf"
  setsid /usr/sbin/slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$dir/log/slurmctld.out" 2>&1 &
  ctld_pid=$!
  ctld_exe="$(readlink -f /usr/sbin/slurmctld)"
  echo "slurmctld $ctld_pid $ctld_exe" >>"$dir/pids"
  : >"$dir/nodes"
  for ((i = 1; i <= nodes; i++)); do start_node "$i"; done

  local names=()
  for ((i = 1; i <= nodes; i++)); do names+=("node$i"); done
  wait_idle "${names[@]}"
  echo "cluster.sh: ${nodes} nodes idle in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" \
    "(bridge $bridge, ${net}.0/24, slurmctld ${ctl_addr}:${ctld_port}, SLURM_CONF=$SLURM_CONF)"
}

stop_nodes() {
  [[ -f "$dir/nodes" ]] || return 0
  local name unshare_pid unshare_exe init_pid init_exe k
  while read -r name unshare_pid unshare_exe init_pid init_exe; do
    # The node's init passes SIGTERM to slurmd and exits with it; its PID
    # namespace (step daemons, tasks) goes with it.
    if pid_alive "$init_pid" "$init_exe"; then
      kill -TERM "$init_pid" 2>/dev/null || true
      for ((k = 0; k < 100; k++)); do pid_alive "$init_pid" "$init_exe" || break; sleep 0.1; done
      pid_alive "$init_pid" "$init_exe" && kill -KILL "$init_pid" 2>/dev/null || true
      echo "cluster.sh: stopped $name (init pid $init_pid)"
    fi
    stop_recorded "$name-unshare" "$unshare_pid" "$unshare_exe" >/dev/null
  done <"$dir/nodes"
  rm -f "$dir/nodes"
}

stop() {
  if [[ ! -f "$dir/cluster.state" && ! -f "$dir/pids" ]]; then
    echo "cluster.sh: nothing to stop in $dir"
    return 0
  fi
  [[ -f "$dir/cluster.state" ]] && load_state
  stop_nodes
  stop_all_recorded '/run/rtrace-munge.*'
  if [[ -n "${bridge:-}" ]]; then
    cleanup_partial
    echo "cluster.sh: removed $bridge and ${nodes} network namespaces"
  fi
  rm -f "$dir/cluster.state"
}

kill_node() {
  load_state
  local name="$1" line init_pid init_exe
  node_index "$name" >/dev/null
  line="$(node_line "$name")"
  read -r _ _ _ init_pid init_exe <<<"$line"
  pid_alive "$init_pid" "$init_exe" || die "$name is not running"
  # PID 1 of a PID namespace dies: the kernel SIGKILLs every process in it.
  kill -KILL "$init_pid"
  local k
  for ((k = 0; k < 50; k++)); do pid_alive "$init_pid" "$init_exe" || break; sleep 0.1; done
  echo "cluster.sh: killed $name (init pid $init_pid and everything in its PID namespace)"
}

start_node_again() {
  load_state
  local name="$1" i line init_pid init_exe
  i="$(node_index "$name")"
  line="$(node_line "$name")"
  read -r _ _ _ init_pid init_exe <<<"$line"
  pid_alive "$init_pid" "$init_exe" && die "$name is running"
  export SLURM_CONF="$dir/slurm.conf"
  ctld_pid="$(awk '$1 == "slurmctld" { print $2 }' "$dir/pids")"
  ctld_exe="$(awk '$1 == "slurmctld" { print $3 }' "$dir/pids")"
  start_node "$i"
  # A node that was down comes back on registering (ReturnToService=2).
  wait_idle "$name"
  echo "cluster.sh: started $name again, idle"
}

exec_in_node() {
  load_state
  local name="$1" line init_pid init_exe
  shift
  node_index "$name" >/dev/null
  line="$(node_line "$name")"
  read -r _ _ _ init_pid init_exe <<<"$line"
  pid_alive "$init_pid" "$init_exe" || die "$name is not running"
  exec nsenter --target "$init_pid" --net --uts --mount --pid -- "$@"
}

case "$action" in
  start) [[ $# -le 1 ]] || usage; start "$@" ;;
  stop) [[ $# -eq 0 ]] || usage; stop ;;
  kill-node) [[ $# -eq 1 ]] || usage; kill_node "$1" ;;
  start-node) [[ $# -eq 1 ]] || usage; start_node_again "$1" ;;
  exec) [[ $# -ge 2 ]] || usage; exec_in_node "$@" ;;
  *) usage ;;
esac
