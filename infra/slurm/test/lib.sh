# Sourced by the Slurm test scripts: start_cluster starts the single-node
# Slurm of cluster.sh in $cluster and, on exit, stops it and removes $work
# (kept when the script failed or KEEP=1). Needs $here, $work, $cluster and
# a step function; sets SLURM_CONF and version.

cleanup() {
    local rc=$?
    if ! "$here/cluster.sh" stop "$cluster"; then
        rc=1
    fi
    if [ "$rc" -eq 0 ] && [ "${KEEP:-0}" != 1 ]; then
        rm -rf "$work"
    else
        step "kept $work"
    fi
    exit "$rc"
}

start_cluster() {
    trap cleanup EXIT
    step "starting a single-node Slurm in $cluster"
    "$here/cluster.sh" start "$cluster"
    export SLURM_CONF="$cluster/slurm.conf"
    version="$(sinfo --version)"
}
