#!/usr/bin/env bash
# A real single-node Slurm for tests: munged, slurmctld and slurmd on this
# machine, with every file (key, config, state, spool, logs, pid files,
# sockets) under DIR. Nothing system-wide is touched but the Debian packages
# `slurm-wlm` and `munge`, which must be installed; run as root (SlurmUser=root).
#
#   infra/slurm/test/cluster.sh start DIR   write DIR/slurm.conf and a munge key,
#                                           start the three daemons, wait until
#                                           the node is idle; prints the line to
#                                           source (export SLURM_CONF=DIR/slurm.conf)
#   infra/slurm/test/cluster.sh stop DIR    cancel every job, stop the daemons
#                                           by their pid files, then fail if any
#                                           process started under DIR remains
#
# Clients (sbatch, srun, sinfo, squeue) find the cluster through
# SLURM_CONF=DIR/slurm.conf. The node is this machine's short hostname on
# 127.0.0.1 with min(nproc, 2) CPUs, 90 % of MemTotal and two pretend GPUs
# (gres files /dev/null and /dev/zero); the partition is `debug`. The controller and node ports are chosen free at start, so two
# clusters (two test runs) can coexist.
#
# Every daemon is started with DV_SLURM_CLUSTER=DIR in its environment, and
# everything they start inherits it; `stop` looks for that marker in
# /proc/*/environ to prove that nothing is left (job processes carry the
# submitter's SLURM_CONF=DIR/slurm.conf and a SLURM_JOB_ID, also looked for).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd="$1"
mkdir -p "$2"
dir="$(cd "$2" && pwd)"
conf="$dir/slurm.conf"

# This script's own processes must not look like the cluster's (see leftovers).
unset DV_SLURM_CLUSTER
say() { printf 'cluster.sh: %s\n' "$*" >&2; }

# The live processes of this cluster: the daemons carry DV_SLURM_CLUSTER=DIR;
# job processes carry the submitter's SLURM_CONF=DIR/slurm.conf and a
# SLURM_JOB_ID (which the caller, holding only SLURM_CONF, lacks); slurmstepd
# overwrites its environment with its title, so any Slurm or munge daemon
# whose working directory or an open file lies under DIR counts too.
leftovers() {
    local p
    {
        grep -lszxF "DV_SLURM_CLUSTER=$dir" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
        for p in $(grep -lszxF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
            grep -qszx 'SLURM_JOB_ID=[0-9]*' "/proc/$p/environ" && echo "$p"
        done
        for p in $(for n in munged slurmctld slurmscriptd slurmd slurmstepd; do pgrep -x "$n"; done); do
            case "$(readlink "/proc/$p/cwd" 2>/dev/null)/" in "$dir"/*) echo "$p"; continue ;; esac
            find "/proc/$p/fd" -mindepth 1 -maxdepth 1 -lname "$dir/*" 2>/dev/null | grep -q . && echo "$p"
        done
    } | sort -un
}

# Two distinct free TCP ports, "CTLD SLURMD".
free_ports() {
    python3 -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])'
}

# Waits up to $2 seconds for pid $1 to exit; 0 when it did.
wait_gone() {
    local pid="$1" n=0
    while kill -0 "$pid" 2>/dev/null; do
        [ "$n" -ge $(($2 * 10)) ] && return 1
        sleep 0.1
        n=$((n + 1))
    done
}

stop() {
    if [ -f "$conf" ] && [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
        SLURM_CONF="$conf" scancel --quiet --full --user=root 2>/dev/null || true
        # Give slurmd a moment to reap the job steps before it goes.
        for _ in $(seq 50); do
            [ -z "$(SLURM_CONF="$conf" squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    local name pid
    for name in slurmd slurmctld munged; do
        [ -f "$dir/$name.pid" ] || continue
        pid="$(cat "$dir/$name.pid")"
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            if ! wait_gone "$pid" 10; then
                say "$name ($pid) ignored SIGTERM for 10 s: SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
                wait_gone "$pid" 5 || true
            fi
        fi
        rm -f "$dir/$name.pid"
    done
    # Job steps (slurmstepd) and job processes that outlived slurmd.
    local left
    left="$(leftovers)"
    if [ -n "$left" ]; then
        sleep 2
        left="$(leftovers)"
    fi
    if [ -n "$left" ]; then
        say "processes of the cluster in $dir remain after stop:"
        # shellcheck disable=SC2086
        ps -o pid,ppid,etime,args -p "$(echo $left | tr ' ' ',')" >&2 || true
        # shellcheck disable=SC2086
        kill -KILL $left 2>/dev/null || true
        return 1
    fi
    say "stopped: no process of the cluster in $dir remains"
}

start() {
    for b in munged slurmctld slurmd sinfo sbatch; do
        command -v "$b" >/dev/null || { say "$b not found: apt-get install slurm-wlm munge"; exit 1; }
    done
    [ "$(id -u)" -eq 0 ] || { say "run as root (SlurmUser=root)"; exit 1; }
    if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
        say "a cluster already runs in $dir (stop it first)"
        exit 1
    fi
    chmod 0700 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chmod 0700 "$dir/munge"
    rm -f "$dir"/*.log "$dir/munge/"*

    # munge: a fresh key, a private socket; nothing under /etc or /run.
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 0400 "$dir/munge/munge.key"
    local socket="$dir/munge/munge.socket"
    DV_SLURM_CLUSTER="$dir" munged --force \
        --key-file="$dir/munge/munge.key" --socket="$socket" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed"
    for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
    [ -S "$socket" ] || { say "munged did not open $socket; see $dir/munged.log"; stop || true; exit 1; }

    local host cpus mem_kb ports
    read -r -a ports <<<"$(free_ports)"
    host="$(hostname -s)"
    cpus="$(nproc)"
    [ "$cpus" -gt 2 ] && cpus=2
    mem_kb="$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
    cat >"$conf" <<EOF
# Written by infra/slurm/test/cluster.sh: a single-node test cluster under $dir.
ClusterName=dvtest
SlurmctldHost=localhost
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$((mem_kb * 9 / 10 / 1024)) Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    # Two pretend GPUs (Slurm counts a GPU only with a device file, so
    # /dev/null and /dev/zero): enough for the GPU requests of train.sbatch
    # to be scheduled; nothing here uses a GPU.
    printf 'AutoDetect=off\nNodeName=%s Name=gpu File=/dev/null\nNodeName=%s Name=gpu File=/dev/zero\n' \
        "$host" "$host" >"$dir/gres.conf"
    # SLURM_CONF too: slurmd looks for gres.conf next to it, not next to -f.
    DV_SLURM_CLUSTER="$dir" SLURM_CONF="$conf" slurmctld -f "$conf" -c
    DV_SLURM_CLUSTER="$dir" SLURM_CONF="$conf" slurmd -f "$conf" -N "$host"
    local state=""
    for _ in $(seq 600); do
        state="$(SLURM_CONF="$conf" sinfo -h -N -n "$host" -o %T 2>/dev/null || true)"
        [ "$state" = idle ] && break
        sleep 0.1
    done
    if [ "$state" != idle ]; then
        say "node $host is '${state:-unreachable}' after 60 s; logs:"
        tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
        stop || true
        exit 1
    fi
    say "node $host idle ($(SLURM_CONF="$conf" sinfo --version)); clients need: export SLURM_CONF=$conf"
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
