#!/usr/bin/env bash
# A sweep as a Slurm array job on a one-node cluster on localhost (docs/sweeps.md): starts
# munged, slurmctld and slurmd with a generated slurm.conf, submits the sweep that
# `vtpu sweep --emit-slurm` writes, waits (bounded), merges the shards, checks that every
# point is present exactly once and equals the same sweep run locally, and stops the daemons.
# Usage: test_slurm_array.sh VTPU_BINARY     (ctest label: slurm)
set -euo pipefail
vtpu=$(realpath "$1")
for tool in munged slurmctld slurmd sbatch squeue; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not installed (scripts/install-deps.sh installs slurm-wlm and munge)"
    exit 77
  fi
done

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: slurmd runs jobs as their users and must run as root (as CI does)"
  exit 77
fi

work=$(mktemp -d /tmp/vtpu-slurm-test.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  # Only the daemons this script started, by their pid files.
  for f in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  for log in "$work"/log/*; do echo "== $log"; tail -20 "$log"; done
  exit 1
}

# munge: a fresh key and a private socket.
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/log"
chmod 711 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/munged.seed"

# Two free TCP ports for the controller and the node daemon.
read -r ctld_port d_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
cat > "$work/slurm.conf" <<EOF
ClusterName=vtpu-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
SlurmUser=$(id -un)
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"
slurmctld -D -f "$SLURM_CONF" > "$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" > "$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 60); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t | grep -q idle || fail "the node did not come up"

# A small sweep: LeNet-5 on the tiny core, 2 dtypes x 2 buffers (one too small) x 3 bandwidths.
cat > "$work/sweep.yaml" <<'EOF'
name: slurm-test
base: tiny-16x16
models: [lenet5]
dtypes: [int8, bf16]
axes:
  - key: core.unified_buffer.bytes
    values: [16KiB, 256KiB]
  - key: memory.bandwidth_gbytes_per_s
    values: [16, 32, 64]
EOF
points=12
export VTPU_MODEL_DIR="$work/models"
"$vtpu" sweep "$work/sweep.yaml" --emit-slurm "$work/job" --tasks 3
timeout 600 sbatch --wait "$work/job/sweep.sbatch" || fail "the array job failed or timed out"
ls "$work/job/shards/"*.sqlite | wc -l | grep -qx 3 || fail "expected 3 shard databases"
"$work/job/merge.sh"
"$vtpu" sweep export "$work/job/results.sqlite" --csv "$work/slurm.csv"

# The same sweep on this machine, for comparison.
"$vtpu" sweep "$work/sweep.yaml" -q -j 2 --db "$work/local.sqlite"
"$vtpu" sweep export "$work/local.sqlite" --csv "$work/local.csv"

/usr/bin/python3 - "$work/slurm.csv" "$work/local.csv" "$points" <<'EOF'
import csv, sys
slurm = list(csv.DictReader(open(sys.argv[1])))
local = {r["key"]: r for r in csv.DictReader(open(sys.argv[2]))}
points = int(sys.argv[3])
keys = [r["key"] for r in slurm]
assert len(slurm) == points, f"{len(slurm)} rows, expected {points}"
assert len(set(keys)) == points, "a point appears twice"
assert set(keys) == set(local), "the array job and the local run cover different points"
for r in slurm:
    l = local[r["key"]]
    for c in ("status", "cycles", "energy_per_inference_j", "dnf_short"):
        assert r[c] == l[c], f"{r['key']} {c}: {r[c]} on Slurm, {l[c]} locally"
print(f"OK: {points} points, each exactly once, equal to the local run")
EOF
