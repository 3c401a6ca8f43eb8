#!/usr/bin/env bash
# PID 1 of one simulated node (started by cluster.sh inside the node's network,
# UTS, mount and PID namespaces): gives the node its hostname, a private /tmp
# and /dev/shm (node-local, as on a real node: Slurm's PMIx sockets and Open
# MPI's shared-memory segments live there) and its own /etc/hosts, then runs
# slurmd in the foreground and reaps whatever is reparented to it.
#
#   node_init.sh NAME HOSTS_FILE SLURM_CONF LOG
#
# SIGTERM (cluster.sh stop, or unshare's --kill-child when unshare is
# stopped) is passed to slurmd; when this process exits the kernel kills
# everything else in the node's PID namespace, as a node that goes down does.
set -uo pipefail
name="$1" hosts="$2" conf="$3" log="$4"

hostname "$name" || exit 1
mount -t tmpfs -o mode=1777,size=512m "tmp-$name" /tmp || exit 1
mount -t tmpfs -o mode=1777,size=512m "shm-$name" /dev/shm || exit 1
mount --bind "$hosts" /etc/hosts || exit 1

/usr/sbin/slurmd -D -N "$name" -f "$conf" </dev/null >>"$log" 2>&1 &
slurmd_pid=$!
trap 'kill -TERM "$slurmd_pid" 2>/dev/null' TERM INT HUP
# `wait` returns early when a trapped signal arrives: wait again until
# slurmd itself has gone (bash reaps reparented orphans meanwhile).
while kill -0 "$slurmd_pid" 2>/dev/null; do
  wait "$slurmd_pid"
done
