#!/usr/bin/env bash
# Issue 43, "Several machines, really exercised", on the two-GPU host: one GPU rank in each of
# two network namespaces joined by a veth pair (dv0 10.43.0.1 <-> dv1 10.43.0.2), NCCL's
# shared-memory, peer-to-peer and InfiniBand transports off and its sockets on the veth, so the
# ranks meet and all-reduce as ranks on two hosts do. The GPU half of infra/dv/tests/it/procs.rs
# (two_network_namespaces_...), whose steps and checks it mirrors:
#   1. the reference: `dv train --config ref.toml --gpus 2` on the host (default NCCL transports);
#   2. the same config in the two namespaces (RANK, WORLD_SIZE=2, LOCAL_RANK=0,
#      CUDA_VISIBLE_DEVICES=RANK, MASTER_ADDR=10.43.0.1, MASTER_PORT): the rendezvous goes through
#      MASTER_ADDR over the veth, the step-100 parameters are compared with the reference
#      (compare.py), NCCL's INFO log shows the transport it used (NET/Socket on dv0/dv1);
#   3. again, rank 1 SIGKILLed once the first checkpoint (every 20 steps) exists: the seconds from
#      the kill to rank 0's exit, against [train] collective_timeout_s (20), and rank 0's message;
#   4. both ranks started again: rank 0 logs "resumed from ... (step N)", both exit 0, and the
#      step-100 parameters are compared with those of the uninterrupted run of 2.
# Run as root on nvidia-h200-x2 from the repo root, with the xz-compressed dv carried:
#   benchmarks/train/netns_gpu.sh .carry/dv.xz $OUT
# Writes $OUT/netns.json (the summary), $OUT/netns.log, and everything else (rank logs, NCCL logs,
# metrics) in $OUT/netns.tgz; checkpoints are deleted once compared. The namespaces are deleted
# and every rank it started is killed on exit, whatever happens; every wait has a limit and the
# whole script stays within BUDGET_S (default 420 s) of a device call's 600 s. Exits 0 when every
# check passed, 1 otherwise.
set -uo pipefail
dvxz=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
# shellcheck source=benchmarks/device_env.sh
. "$here/../device_env.sh"

budget=${BUDGET_S:-420}
steps=100 every=20 timeout_s=20 batch=16
addrs=(10.43.0.1 10.43.0.2)
tag=dv43g$$
ns=("${tag}a" "${tag}b")
pids=()
# NVLink multicast stays off in every process (KINDS.md), here and in the namespaces.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$out/netns.log"; }
now() { date +%s.%N; }
left() { echo $((budget - SECONDS)); }
# Whether PID is running (not gone, not a zombie).
alive() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2> /dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
# shellcheck disable=SC2013 # the files hold pids separated by spaces
descendants() { local c; for c in $(cat /proc/"$1"/task/*/children 2> /dev/null); do descendants "$c"; echo "$c"; done; }
# SIGKILL to PID and every process under it (by id; the launcher's ranks are its children).
# shellcheck disable=SC2086 # $d: a list of pids
kill_tree() { local d; d=$(descendants "$1"); kill -KILL $d "$1" 2> /dev/null; }
# wait_for PID LIMIT_S: sets rc to PID's exit status; at the limit (or the budget's end) kills
# its tree and sets rc=124.
wait_for() {
    local pid=$1 lim=$2 t0=$SECONDS
    [ "$lim" -gt "$(left)" ] && lim=$(left)
    while alive "$pid"; do
        if [ $((SECONDS - t0)) -ge "$lim" ]; then
            say "pid $pid still running after ${lim} s: killed"
            kill_tree "$pid"; wait "$pid" 2> /dev/null; rc=124; return
        fi
        sleep 0.05
    done
    wait "$pid"; rc=$?
}

# The run's config: benchmarks/train/gpu.sh's small model, global batch 16, 100 steps, a
# checkpoint every 20 steps, collectives failing after 20 s. The same for every run but its dir.
small='sizes = { mfcc = 20, conv_channels = 8, kernel_freq = 9, kernel_time = 5, gru = 64, gru_layers = 2, classes = 17, dropout = 0.05 }'
cfg() {  # cfg NAME: writes $out/NAME/run.toml, prints its path
    local d=$out/$1; mkdir -p "$d"
    sed -e "s|@SIZES@|$small|" -e "s|@CLASSES@|16|" -e "s|@LABELS@|4, 12|" -e "s|@BATCH@|$batch|" \
        -e "s|@STEPS@|$steps|" -e "s|@DIR@|$d|g" -e "s|@PROFILE@|false|" \
        -e "s|^every = 100000\$|every = $every|" -e "s|^seed = 7\$|seed = 7\ncollective_timeout_s = $timeout_s|" \
        "$here/segmentation.toml.in" > "$d/run.toml"
    echo "$d/run.toml"
}

# start_rank R CONFIG PHASE PORT: rank R of 2 in namespace R on GPU R, sockets on dvR, meeting
# rank 0 at its veth address; its pid in $started (ip netns exec execs dv in place).
# NCCL_HOSTID (one per rank) makes NCCL see two hosts, as it would across machines, so that it
# does not treat the other rank as a local peer at all; SAME_HOSTID=1 leaves it unset (one host
# as NCCL sees it, with only SHM and P2P off).
start_rank() {
    local r=$1 vars
    vars=(RANK="$r" WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR="${addrs[0]}" MASTER_PORT="$4"
        CUDA_VISIBLE_DEVICES="$r" NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1
        NCCL_SOCKET_IFNAME="dv$r" NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$out/nccl/$3.rank$r.%h.%p.log")
    [ -z "${SAME_HOSTID:-}" ] && vars+=(NCCL_HOSTID="$tag-host$r")
    env "${vars[@]}" ip netns exec "${ns[$r]}" "$dv" train --config "$2" \
        > "$out/$3.rank$r.stdout" 2> "$out/$3.rank$r.stderr" &
    started=$!
    pids+=("$started")
}
veth_bytes() { ip -n "${ns[1]}" -s -j link show dv1 2> /dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print(s["tx"]["bytes"], s["rx"]["bytes"])' 2> /dev/null; }

# shellcheck disable=SC2317 # called by the EXIT trap
finish() {
    local status=$1
    trap - EXIT
    export SECONDS_USED=$SECONDS
    for p in ${pids[@]+"${pids[@]}"}; do alive "$p" && kill_tree "$p"; done
    for n in "${ns[@]}"; do
        for p in $(ip netns pids "$n" 2> /dev/null); do kill -KILL "$p" 2> /dev/null; done
        ip netns delete "$n" 2> /dev/null
    done
    say "namespaces deleted: $(ip netns list 2> /dev/null | grep -c "$tag") of ours left"
    J_STATUS=$status python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
E = os.environ.get
def num(k):
    v = E(k)
    try:
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None
def read(p):
    try:
        return open(p, errors="replace").read()
    except OSError:
        return ""
def jload(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
def nccl_lines(phase, pat):
    return [l.strip() for f in sorted(glob.glob(f"{out}/nccl/{phase}.*.log")) for l in open(f, errors="replace") if re.search(pat, l)]
sock = r"via NET/Socket|NET/Socket : Using|Using network Socket"
intra = r"via (P2P|SHM)|P2P/IPC|P2P/CUMEM|via NVLS"
killed_err = read(f"{out}/kill.rank0.stderr")
msg = [l.strip() for l in killed_err.splitlines() if re.search(r"abandoned|stalled|failed|Error|error", l)]
resumed = re.search(r"resumed from (\S+) \(step (\d+)\)", read(f"{out}/resume.rank0.stderr"))
eq, req = jload(f"{out}/equality.json"), jload(f"{out}/resume_equality.json")
res = {
    "machine": E("J_GPUS"),
    "namespaces": [E("J_NS0"), E("J_NS1")], "veth": {"dv0": "10.43.0.1/24", "dv1": "10.43.0.2/24"},
    "rank_env": "RANK=r WORLD_SIZE=2 LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=r MASTER_ADDR=10.43.0.1 MASTER_PORT=2954x",
    "nccl_env": "NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=dv<r> NCCL_NVLS_ENABLE=0" + ("" if E("SAME_HOSTID") else " NCCL_HOSTID=<one per rank>"),
    "config": {"steps": int(E("J_STEPS", "0")), "global_batch": int(E("J_BATCH", "0")),
               "checkpoint_every": int(E("J_EVERY", "0")), "collective_timeout_s": num("J_TIMEOUT")},
    "reference_gpus2": {"rc": num("J_REF_RC"), "wall_s": num("J_REF_WALL"),
                        "transport": nccl_lines("ref", r" via ")[:4]},
    "namespaces_run": {"rc": [num("J_W_RC0"), num("J_W_RC1")], "wall_s": num("J_W_WALL"),
                       "finished": f"step {E('J_STEPS')}/{E('J_STEPS')}" in read(f"{out}/whole.rank0.stderr"),
                       "veth_bytes_tx_rx_rank1": E("J_VETH"),
                       "socket_lines": len(nccl_lines("whole", sock)), "p2p_shm_nvls_lines": len(nccl_lines("whole", intra)),
                       "transport": nccl_lines("whole", sock)[:8]},
    "equality": eq, "max_rel_diff": eq and eq.get("max_rel_diff"),
    "kill": {"checkpoint_before_kill": E("J_K_CK"), "rank1_comm": E("J_K_COMM"),
             "last_step_logged_before_resume": E("J_K_LOGGED"),
             "kill_to_exit_s": num("J_K_SECS"), "rank0_rc": num("J_K_RC0"), "rank1_rc": num("J_K_RC1"),
             "rank0_message": msg[-6:], "names_rank_1": any(re.search(r"\brank 1\b", l) for l in msg),
             "note": E("J_K_NOTE")},
    "resume": {"rc": [num("J_R_RC0"), num("J_R_RC1")], "wall_s": num("J_R_WALL"),
               "resumed_line": resumed.group(0) if resumed else None,
               "resume_step": int(resumed.group(2)) if resumed else None,
               "finished": f"step {E('J_STEPS')}/{E('J_STEPS')}" in read(f"{out}/resume.rank0.stderr"),
               "vs_uninterrupted_namespaces_run": req},
    "script_status": int(E("J_STATUS", "0")), "seconds": int(E("SECONDS_USED", "0")),
}
k, r, w = res["kill"], res["resume"], res["namespaces_run"]
checks = {
    "rendezvous_and_training_in_namespaces": w["rc"] == [0.0, 0.0] and w["finished"],
    "nccl_used_sockets_only": w["socket_lines"] > 0 and w["p2p_shm_nvls_lines"] == 0,
    "same_parameters_as_gpus2 (max_rel_diff < 1e-3)": bool(eq) and eq["max_rel_diff"] < 1e-3,
    "rank0_failed_within_timeout": k["rank0_rc"] not in (None, 0.0, 124.0) and k["kill_to_exit_s"] is not None
                                   and k["kill_to_exit_s"] <= res["config"]["collective_timeout_s"] + 5,
    "rank0_names_rank_1": k["names_rank_1"],
    "resumed_and_finished": r["rc"] == [0.0, 0.0] and r["resume_step"] is not None and r["finished"],
}
res["checks"] = checks
json.dump(res, open(f"{out}/netns.json", "w"), indent=1)
print(json.dumps(res, indent=1))
sys.exit(0 if all(checks.values()) and res["script_status"] == 0 else 1)
PY
    local ok=$?
    (cd "$out" && find . -name '*.safetensors' -delete; rm -rf bin lib netns.tgz)
    tar czf "/tmp/$tag.tgz" -C "$out" . && mv -f "/tmp/$tag.tgz" "$out/netns.tgz"
    if [ "$ok" = 0 ]; then say "done: every check passed, $SECONDS s"; else say "done: a check failed (netns.json: checks), $SECONDS s"; fi
    exit "$ok"
}
trap 'finish $?' EXIT
trap 'exit 130' INT TERM HUP
export J_STEPS=$steps J_BATCH=$batch J_EVERY=$every J_TIMEOUT=$timeout_s J_NS0=${ns[0]} J_NS1=${ns[1]}

mkdir -p "$out/nccl"
device_env "$dvxz" "$out"   # $dv, LD_LIBRARY_PATH (torch, CUDA 13, NCCL as libnccl.so)
J_GPUS=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tr '\n' ';'); export J_GPUS
say "GPUs: $J_GPUS; uid $(id -u); $("$dv" --version 2>&1 | head -1)"

say "== two network namespaces joined by a veth pair"
[ "$(id -u)" = 0 ] || { say "not root: cannot make network namespaces"; exit 1; }
if ! { ip netns add "${ns[0]}" && ip netns add "${ns[1]}" \
    && ip link add dv0 netns "${ns[0]}" type veth peer name dv1 netns "${ns[1]}"; }; then
    say "cannot make the namespaces"; exit 1
fi
for r in 0 1; do
    if ! { ip -n "${ns[$r]}" addr add "${addrs[$r]}/24" dev "dv$r" && ip -n "${ns[$r]}" link set "dv$r" up \
        && ip -n "${ns[$r]}" link set lo up; }; then
        say "cannot set up dv$r"; exit 1
    fi
done
for r in 0 1; do ip -n "${ns[$r]}" -br addr | tee -a "$out/netns.log"; done
for i in 1 2 3 4 5 6 7 8 9 10; do  # the veth's carrier can take a moment
    ip netns exec "${ns[1]}" ping -c 1 -W 1 "${addrs[0]}" > /dev/null 2>&1 && break
done
if [ "$i" -lt 10 ]; then say "10.43.0.2 reaches 10.43.0.1 (ping)"; else say "no ping over the veth (or no ping command; going on)"; fi

for name in ref whole kill; do cfg "$name" > /dev/null; done
if ! { grep -q "^collective_timeout_s = $timeout_s\$" "$out/ref/run.toml" && grep -q "^every = $every\$" "$out/ref/run.toml"; }; then
    say "segmentation.toml.in changed: the config lacks collective_timeout_s or checkpoint every"; exit 1
fi

say "== 1. reference: dv train --gpus 2 on the host, default NCCL transports"
t0=$(now)
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$out/nccl/ref.%h.%p.log" \
    "$dv" train --config "$out/ref/run.toml" --gpus 2 > "$out/ref.stdout" 2> "$out/ref.stderr" &
p=$!; pids+=("$p")
wait_for "$p" 150
J_REF_RC=$rc J_REF_WALL=$(python3 -c "print(round($(now)-$t0,1))"); export J_REF_RC J_REF_WALL
say "reference: rc=$rc, ${J_REF_WALL} s"; tail -2 "$out/ref.stderr"
grep -h " via " "$out"/nccl/ref.*.log 2> /dev/null | head -4

say "== 2. one rank in each namespace (MASTER_ADDR=${addrs[0]})"
before=$(veth_bytes)
t0=$(now)
start_rank 0 "$out/whole/run.toml" whole 29543; w0=$started
start_rank 1 "$out/whole/run.toml" whole 29543; w1=$started
wait_for "$w0" 150; J_W_RC0=$rc
wait_for "$w1" 30; J_W_RC1=$rc
J_W_WALL=$(python3 -c "print(round($(now)-$t0,1))")
J_VETH="before: ${before:-?}; after: $(veth_bytes)"
export J_W_RC0 J_W_RC1 J_W_WALL J_VETH
say "namespaces: rc=$J_W_RC0/$J_W_RC1, ${J_W_WALL} s; veth dv1 tx/rx bytes $J_VETH"
tail -2 "$out/whole.rank0.stderr"
say "NCCL transport in the namespaces (want NET/Socket on dv0/dv1, no P2P/SHM):"
grep -hE "via NET/Socket|NET/Socket : Using|Using network" "$out"/nccl/whole.*.log 2> /dev/null | sort | uniq | head -12 | tee -a "$out/netns.log"
grep -hE "via (P2P|SHM)|via NVLS" "$out"/nccl/whole.*.log 2> /dev/null | head -3 | sed 's/^/UNEXPECTED: /' | tee -a "$out/netns.log"
a=$out/ref/ck/step-$(printf %010d $steps).safetensors b=$out/whole/ck/step-$(printf %010d $steps).safetensors
if [ -f "$a" ] && [ -f "$b" ]; then
    python3 "$here/compare.py" "$a" "$b" | tee "$out/equality.json"
else
    say "no step-$steps checkpoint to compare: $(find "$out/ref/ck" "$out/whole/ck" 2>&1 | tr '\n' ' ')"
fi

say "== 3. rank 1 killed (SIGKILL) after the first checkpoint"
start_rank 0 "$out/kill/run.toml" kill 29544; k0=$started
start_rank 1 "$out/kill/run.toml" kill 29544; k1=$started
t0=$SECONDS lim=$((120 < $(left) ? 120 : $(left)))
ck=
while [ -z "$ck" ]; do
    ck=$(find "$out/kill/ck" -maxdepth 1 -name 'step-[0-9]*.safetensors' -printf '%f\n' 2> /dev/null | sort | tail -1)
    [ -n "$ck" ] && break
    if ! alive "$k0" || ! alive "$k1" || [ $((SECONDS - t0)) -ge "$lim" ]; then break; fi
    sleep 0.02
done
J_K_COMM=$(cat "/proc/$k1/comm" 2> /dev/null); J_K_CK=$ck; export J_K_COMM J_K_CK
last_step() { tail -1 "$out/kill/metrics.jsonl" 2> /dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])' 2> /dev/null; }
if [ -n "$ck" ] && alive "$k0" && alive "$k1"; then
    kill -KILL "$k1"; killed=$(now)
    say "killed rank 1 (pid $k1, $J_K_COMM) with $ck written"
    wait_for "$k0" $((timeout_s + 25)); J_K_RC0=$rc
    J_K_SECS=$(python3 -c "print(round($(now)-$killed,3))")
    wait_for "$k1" 10; J_K_RC1=$rc
    J_K_LOGGED=$(last_step)
    J_K_NOTE="rank 0 exit $J_K_RC0 ${J_K_SECS} s after the kill (timeout ${timeout_s} s)"
else
    J_K_NOTE="no kill: checkpoint ${ck:-none}, rank 0 alive: $(alive "$k0" && echo yes || echo no), rank 1 alive: $(alive "$k1" && echo yes || echo no) (the run ended or failed first, or the time ran out; see kill.rank*.stderr)"
    wait_for "$k0" 30; J_K_RC0=$rc; wait_for "$k1" 10; J_K_RC1=$rc; J_K_SECS=
fi
export J_K_RC0 J_K_RC1 J_K_SECS J_K_NOTE J_K_LOGGED=${J_K_LOGGED:-}
say "$J_K_NOTE"
say "rank 0's message:"
grep -E "abandoned|stalled|failed|Error" "$out/kill.rank0.stderr" | tail -6 | tee -a "$out/netns.log"

say "== 4. both started again: resume from the checkpoint"
t0=$(now)
start_rank 0 "$out/kill/run.toml" resume 29545; r0=$started
start_rank 1 "$out/kill/run.toml" resume 29545; r1=$started
wait_for "$r0" 150; J_R_RC0=$rc
wait_for "$r1" 30; J_R_RC1=$rc
J_R_WALL=$(python3 -c "print(round($(now)-$t0,1))"); export J_R_RC0 J_R_RC1 J_R_WALL
say "resume: rc=$J_R_RC0/$J_R_RC1, ${J_R_WALL} s"
grep -E "resumed from" "$out/resume.rank0.stderr" | tee -a "$out/netns.log"
tail -2 "$out/resume.rank0.stderr"
c=$out/kill/ck/step-$(printf %010d $steps).safetensors
[ -f "$c" ] && [ -f "$b" ] && python3 "$here/compare.py" "$b" "$c" | tee "$out/resume_equality.json"
exit 0
