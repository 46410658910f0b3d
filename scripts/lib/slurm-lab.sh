#!/usr/bin/env bash
# A throwaway Slurm cluster of Debian's real daemons (slurmctld, slurmd and
# munged from the packages scripts/test.sh installs, their units disabled), each
# "node" in a lab network namespace the caller made, with its own hostname (a
# UTS namespace per daemon), and every file of the cluster in one private
# directory: slurm.conf, the munge key and socket, state, spool, logs and pid
# files. Nothing is read from or written to the machine's /etc/slurm,
# /etc/munge, /run/munge or /var/spool; no daemon runs in the machine's own
# network namespace (munged has no network socket: it serves a Unix socket in
# DIR, which the daemons of every namespace reach by its path).
#
# Usage:
#   slurm-lab.sh start DIR --controller NS=ADDR --node NAME=NS=ADDR [--node ...]
#                [--conf 'Key=Value']... [--cpus N] [--timeout SECS]
#       Writes DIR/slurm.conf, starts munged, slurmctld in NS (hostname `ctl`)
#       and one slurmd per node in its NS (hostname NAME), and waits (default
#       60 s) until every node has registered. DIR must not exist yet or be
#       empty. Each --conf line is appended to slurm.conf (HealthCheckProgram,
#       HealthCheckInterval, ...); --cpus gives every node N CPUs (default 1:
#       one task per node). Prints `SLURM_CONF=DIR/slurm.conf`.
#   slurm-lab.sh run DIR CMD [ARG...]
#       Runs a client command (sbatch, srun, scontrol, sinfo, squeue, ...) in
#       the controller's namespace with SLURM_CONF pointing at the cluster.
#   slurm-lab.sh node-run DIR NAME CMD [ARG...]
#       The same, in node NAME's namespace (as its HealthCheckProgram runs).
#   slurm-lab.sh stop DIR
#       Stops the daemons this cluster started (by the pids it recorded, each
#       checked to still be that daemon) and removes DIR. Safe to call twice or
#       after a failed start.
#   slurm-lab.sh logs DIR
#       Prints the tail of every daemon's log (for a failing test's message).
#
# Files in DIR: slurm.conf; munge/ (key, socket, log); state/ (slurmctld's
# StateSaveLocation); spool/NAME/ (SlurmdSpoolDir); log/; pids (one line per
# daemon: `pid name`); namespaces (one line per daemon: `name ns`).
#
# Daemons run as root (SlurmUser=root, munged --force): they live only as long
# as the test, in namespaces nothing else uses. HealthCheckProgram is run by
# slurmd with an environment of its own (not the caller's): give the program a
# fixed PATH or absolute paths. scripts/test.sh installs the packages with their
# services disabled; docs/health.md says what the cluster is for.
set -euo pipefail

die() { echo "slurm-lab.sh: $*" >&2; exit 1; }

need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || die "$t not found: install Debian's slurmctld, slurmd, slurm-client and munge (scripts/test.sh does, with their services disabled)"
  done
}

# The daemon with this pid is still the one we started (its command name).
ours() { # PID NAME
  [ -r "/proc/$1/comm" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}

ns_of() { # DIR NAME -> the namespace of the controller (ctl) or a node
  awk -v n="$2" '$1 == n {print $2}' "$1/namespaces"
}

start() {
  local dir=$1
  shift
  local ctl_ns='' ctl_addr='' timeout=60 cpus=1
  local nodes=() conf=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --controller) ctl_ns=${2%%=*}; ctl_addr=${2#*=}; shift 2 ;;
      --node) nodes+=("$2"); shift 2 ;;
      --conf) conf+=("$2"); shift 2 ;;
      --timeout) timeout=$2; shift 2 ;;
      --cpus) cpus=$2; shift 2 ;;
      *) die "start: unknown argument $1" ;;
    esac
  done
  if [ -z "$ctl_ns" ] || [ -z "$ctl_addr" ]; then
    die "start: --controller NS=ADDR is required"
  fi
  [ ${#nodes[@]} -gt 0 ] || die "start: at least one --node NAME=NS=ADDR is required"
  need munged slurmctld slurmd scontrol sinfo
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    die "start: $dir is not empty (another cluster's directory?)"
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$dir/munge" "$dir/state" "$dir/log" "$dir/spool"
  # Searchable by all (as munged asks of its socket's directory), listable by root only.
  chmod 0711 "$dir" "$dir/munge"
  : >"$dir/pids"
  printf 'ctl %s\n' "$ctl_ns" >"$dir/namespaces"

  # munged: a key of its own, its socket, log, pid and seed in DIR/munge.
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 0400 "$dir/munge/munge.key"
  local sock=$dir/munge/munge.socket.2
  munged --force --key-file "$dir/munge/munge.key" --socket "$sock" \
    --pid-file "$dir/munge/munged.pid" --log-file "$dir/munge/munged.log" \
    --seed-file "$dir/munge/munged.seed" ||
    die "munged did not start: $(tail -5 "$dir/munge/munged.log" 2>/dev/null)"
  local _
  for _ in $(seq 50); do [ -s "$dir/munge/munged.pid" ] && [ -S "$sock" ] && break; sleep 0.1; done
  [ -S "$sock" ] || die "munged made no socket $sock"
  printf '%s munged\n' "$(cat "$dir/munge/munged.pid")" >>"$dir/pids"

  {
    echo "# A throwaway cluster (scripts/lib/slurm-lab.sh): every path in $dir."
    echo "ClusterName=rnt"
    echo "SlurmctldHost=ctl($ctl_addr)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$sock"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "ReturnToService=2"
    # Every node of the cluster runs on this machine: the configuration, not
    # the machine's cores, says what a node has.
    echo "SlurmdParameters=config_overrides"
    echo "SlurmdTimeout=30"
    echo "MessageTimeout=5"
    # Quick turns for tests: the scheduler looks again every second.
    echo "SchedulerParameters=sched_interval=1,bf_interval=1"
    local spec name ns addr names=()
    for spec in "${nodes[@]}"; do
      name=${spec%%=*}; ns=${spec#*=}; addr=${ns#*=}; ns=${ns%%=*}
      if [ -z "$name" ] || [ -z "$ns" ] || [ -z "$addr" ] || [ "$addr" = "$ns" ]; then
        die "start: --node $spec: give NAME=NS=ADDR"
      fi
      echo "NodeName=$name NodeHostname=$name NodeAddr=$addr CPUs=$cpus RealMemory=100 State=UNKNOWN"
      names+=("$name")
      printf '%s %s\n' "$name" "$ns" >>"$dir/namespaces"
    done
    echo "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    local line
    for line in ${conf[@]+"${conf[@]}"}; do echo "$line"; done
  } >"$dir/slurm.conf"
  chmod 0644 "$dir/slurm.conf"
  # Read from beside slurm.conf. The plugin named, not detected: detection
  # wants the machine's cgroup layout, which the namespace's /sys lacks.
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"

  # slurmctld in the controller's namespace, as host `ctl`; -D: in the
  # foreground of its own process (ip netns exec and unshare exec, so $! is
  # the daemon), -i: ignore any state a previous run left (there is none).
  # shellcheck disable=SC2016 # $1 is the inner shell's
  ip netns exec "$ctl_ns" unshare --uts -- sh -c \
    'hostname ctl && exec slurmctld -D -i -f "$1"' sh "$dir/slurm.conf" \
    >"$dir/log/slurmctld.out" 2>&1 </dev/null &
  printf '%s slurmctld\n' "$!" >>"$dir/pids"
  for spec in "${nodes[@]}"; do
    name=${spec%%=*}; ns=${spec#*=}; ns=${ns%%=*}
    mkdir -p "$dir/spool/$name"
    # ip netns exec mounts the namespace's own /sys, without the machine's
    # cgroup file systems; slurmd's cgroup plugin only needs to find one
    # mounted (an empty tmpfs reads as cgroup v1, of which nothing is used
    # with proctrack/linuxproc and task/none), so nothing is ever written to
    # the machine's cgroup hierarchy.
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's
    ip netns exec "$ns" unshare --uts -- sh -c \
      'hostname "$2" && mount -t tmpfs -o mode=0755 rnt-slurm-cgroup /sys/fs/cgroup &&
       exec slurmd -D -N "$2" -f "$1"' sh "$dir/slurm.conf" "$name" \
      >"$dir/log/slurmd-$name.out" 2>&1 </dev/null &
    printf '%s slurmd\n' "$!" >>"$dir/pids"
  done

  # Every node registered: none left UNKNOWN or not responding (`*`).
  local deadline=$((SECONDS + timeout)) states
  while :; do
    states=$(run "$dir" sinfo -h -N -o '%N %T' 2>/dev/null || true)
    if [ -n "$states" ] && [ "$(echo "$states" | wc -l)" -ge ${#names[@]} ] &&
      ! echo "$states" | grep -Eqi 'unknown|not_responding|\*|down'; then
      break
    fi
    check_alive "$dir"
    if [ $SECONDS -ge $deadline ]; then
      echo "slurm-lab.sh: the nodes did not all register within ${timeout}s: ${states:-(no answer from slurmctld)}" >&2
      logs "$dir" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "SLURM_CONF=$dir/slurm.conf"
}

# Fail with the logs when a daemon we started is gone.
check_alive() {
  local dir=$1 pid name
  while read -r pid name; do
    if ! ours "$pid" "$name"; then
      echo "slurm-lab.sh: $name (pid $pid) exited" >&2
      logs "$dir" >&2
      exit 1
    fi
  done <"$dir/pids"
}

run() {
  local dir=$1
  shift
  [ -s "$dir/slurm.conf" ] || die "run: $dir/slurm.conf missing (start the cluster first)"
  ip netns exec "$(ns_of "$dir" ctl)" env SLURM_CONF="$dir/slurm.conf" "$@"
}

node_run() {
  local dir=$1 name=$2
  shift 2
  local ns
  ns=$(ns_of "$dir" "$name")
  [ -n "$ns" ] || die "node-run: no node $name in $dir"
  ip netns exec "$ns" env SLURM_CONF="$dir/slurm.conf" "$@"
}

logs() {
  local dir=$1 f
  for f in "$dir"/log/* "$dir"/munge/munged.log; do
    [ -s "$f" ] || continue
    echo "--- $f (last 25 lines)"
    tail -25 "$f"
  done
}

stop() {
  local dir=$1 pid name p ns
  [ -d "$dir" ] || return 0
  if [ -f "$dir/pids" ]; then
    # Daemons first, munged last; each only if it is still the process we started.
    tac "$dir/pids" | while read -r pid name; do
      if ours "$pid" "$name"; then kill -TERM "$pid" 2>/dev/null || true; fi
    done
    local _
    for _ in $(seq 50); do
      local left=0
      while read -r pid name; do ours "$pid" "$name" && left=1; done <"$dir/pids"
      [ $left = 0 ] && break
      sleep 0.1
    done
    while read -r pid name; do
      if ours "$pid" "$name"; then kill -KILL "$pid" 2>/dev/null || true; fi
    done <"$dir/pids"
  fi
  # The step daemons of jobs still running on this cluster's nodes: those in
  # one of its nodes' namespaces.
  if [ -f "$dir/namespaces" ]; then
    for p in $(pgrep -x slurmstepd || true); do
      ns=$(ip netns identify "$p" 2>/dev/null || true)
      [ -n "$ns" ] || continue
      if awk -v n="$ns" '$1 != "ctl" && $2 == n {f=1} END {exit !f}' "$dir/namespaces"; then
        kill -KILL "$p" 2>/dev/null || true
      fi
    done
  fi
  rm -rf "$dir"
}

cmd=${1:-}
[ $# -ge 2 ] || die "usage: slurm-lab.sh start|run|node-run|stop|logs DIR ..."
shift
case "$cmd" in
  start) start "$@" ;;
  run) run "$@" ;;
  node-run) node_run "$@" ;;
  stop) stop "$1" ;;
  logs) logs "$1" ;;
  *) die "unknown command $cmd (start, run, node-run, stop, logs)" ;;
esac
