#!/usr/bin/env bash
# datasets/reference/collect.sh — reproduce the reference matrix in datasets/reference/.
#
# PURPOSE: measure one fixed configuration matrix (13 ext4/xfs/btrfs configurations x the
# fsadvisor micro workloads, plus the raw-device baseline, scheduler "none", 3 repetitions)
# on two RAM-backed device classes, so the model can learn filesystem *mechanisms*
# (journal modes, copy-on-write, allocation groups, log buffers) on a device fast enough
# that the filesystem, not the medium, is the bottleneck:
#   shm-loop : a direct-I/O loop device on a 3 GiB file in /dev/shm (tmpfs), made by
#              `fsadvisor probe --scratch 3G --scratch-dir /dev/shm` and detached by it;
#   zram     : a 3 GiB zram device (default compressor) that this script hot-adds and
#              always resets and hot-removes at the end (trap).
# Neither is an SSD: the numbers inform mechanisms, never another device's levels.
# Then it exports every stored repetition to datasets/reference/runs.csv (export.py).
#
# HAZARDS: needs root. It FORMATS (mkfs, blkdiscard) the devices it creates itself — the
# scratch loop device and the zram device it hot-adds — and nothing else. It never names an
# existing device. It uses one loop device at a time and ~3 GiB of RAM per class (run the
# classes one after the other). It writes the SQLite store at $FSADVISOR_DB (default
# /work/measure/ref.db below) — keep that store out of git.
#
# USAGE (from the repository root, with fsadvisor installed, e.g. `pip install -e .`):
#   sudo datasets/reference/collect.sh [shm|zram|all|export] 
# Environment: FSADVISOR_DB (store), FSADVISOR (the CLI, default `fsadvisor`), PYTHON,
#   REPS (3), RUNTIME (3 s), SIZE (256M), LOGDIR (next to the store).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FSADVISOR_DB="${FSADVISOR_DB:-/work/measure/ref.db}"
FSADVISOR="${FSADVISOR:-fsadvisor}"
PYTHON="${PYTHON:-python3}"  # must import fsadvisor (export.py uses its mkfs argv)
REPS="${REPS:-3}"
RUNTIME="${RUNTIME:-3}"
SIZE="${SIZE:-256M}"
LOGDIR="${LOGDIR:-$(dirname "$FSADVISOR_DB")}"
WHAT="${1:-all}"
mkdir -p "$LOGDIR"

# The matrix: 13 configurations. btrfs gets an explicit nodiscard (kernel >= 6.2 mounts
# btrfs with discard=async by default; the probe's own default btrfs config says nodiscard
# too, an explicit --config does not add it). ext4 and xfs do not discard by default.
CONFIGS=(
  '{"filesystem":"ext4"}'
  '{"filesystem":"ext4","mount":["noatime"]}'
  '{"filesystem":"ext4","mount":["data=journal"]}'
  '{"filesystem":"ext4","mount":["data=writeback"]}'
  '{"filesystem":"ext4","mkfs":{"journal":false}}'
  '{"filesystem":"ext4","mount":["commit=60"]}'
  '{"filesystem":"xfs"}'
  '{"filesystem":"xfs","ag_count":2}'
  '{"filesystem":"xfs","ag_count":16}'
  '{"filesystem":"xfs","mount":["logbufs=8","logbsize=256k"]}'
  '{"filesystem":"btrfs","mount":["nodiscard"]}'
  '{"filesystem":"btrfs","mount":["nodiscard","nodatacow"]}'
  '{"filesystem":"btrfs","mount":["nodiscard","compress=zstd:1"]}'
)
COMMON=(--schedulers none --reps "$REPS" --runtime "$RUNTIME" --cooldown 0 --size "$SIZE"
        --energy estimate --json)
for c in "${CONFIGS[@]}"; do COMMON+=(--config "$c"); done

# The host is shared: /proc/loadavg every 5 s while a class runs (export.py joins the
# 1-minute load at the end of each run's window into host_loadavg_1m).
SAMPLER=""
start_sampler() {
  ( while :; do echo "$(date -u +%s) $(cat /proc/loadavg)"; sleep 5; done ) > "$1" 2>/dev/null &
  SAMPLER=$!
}
stop_sampler() { [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null; SAMPLER=""; }
trap stop_sampler EXIT

run_shm() {
  echo "== shm-loop: $(date -u +%FT%TZ)" >&2
  local rc=0
  start_sampler "$LOGDIR/loadavg-shm-loop.log"
  "$FSADVISOR" probe --scratch 3G --scratch-dir /dev/shm "${COMMON[@]}" \
      > "$LOGDIR/shm-loop.json" 2> "$LOGDIR/shm-loop.log" || rc=$?
  stop_sampler
  echo "== shm-loop: exit $rc at $(date -u +%FT%TZ)" >&2
  # exit 1 = some cells failed (they are stored with status failed): keep going
  [ "$rc" -le 1 ] || return "$rc"
}

ZRAM_ID=""
zram_cleanup() {
  stop_sampler
  if [ -n "$ZRAM_ID" ] && [ -e "/sys/block/zram$ZRAM_ID" ]; then
    # The probe unmounts on its own; be sure nothing of ours is left mounted.
    if findmnt -rn -S "/dev/zram$ZRAM_ID" >/dev/null 2>&1; then
      umount "/dev/zram$ZRAM_ID" || true
    fi
    echo 1 > "/sys/block/zram$ZRAM_ID/reset" || true
    echo "$ZRAM_ID" > /sys/class/zram-control/hot_remove || true
    echo "== zram$ZRAM_ID reset and removed" >&2
  fi
  ZRAM_ID=""
}

run_zram() {
  [ -e /sys/class/zram-control/hot_add ] || { echo "no zram-control (modprobe zram)" >&2; return 2; }
  trap zram_cleanup EXIT INT TERM
  ZRAM_ID="$(cat /sys/class/zram-control/hot_add)"
  local dev="/dev/zram$ZRAM_ID"
  echo 3G > "/sys/block/zram$ZRAM_ID/disksize"   # default compressor (the [bracketed] one)
  echo "== zram: $dev ($(cat /sys/block/zram$ZRAM_ID/comp_algorithm)) $(date -u +%FT%TZ)" >&2
  cat "/sys/block/zram$ZRAM_ID/comp_algorithm" > "$LOGDIR/zram.comp_algorithm"
  local rc=0
  start_sampler "$LOGDIR/loadavg-zram.log"
  "$FSADVISOR" probe "$dev" --yes-wipe "$dev" "${COMMON[@]}" \
      > "$LOGDIR/zram.json" 2> "$LOGDIR/zram.log" || rc=$?
  stop_sampler
  cat "/sys/block/zram$ZRAM_ID/mm_stat" > "$LOGDIR/zram.mm_stat" 2>/dev/null || true
  # The AG count mkfs.xfs applies on this very device (-N: prints the geometry, writes nothing).
  "$PYTHON" "$HERE/export.py" --db "$FSADVISOR_DB" --xfs-geometry "$dev" \
      --geometry-out "$LOGDIR/zram.xfs_geometry.json" || true
  echo "== zram: exit $rc at $(date -u +%FT%TZ)" >&2
  zram_cleanup
  trap - INT TERM
  trap stop_sampler EXIT
  [ "$rc" -le 1 ] || return "$rc"
}

do_export() {
  # shm-loop: the scratch loop device is gone; a sparse 3 GiB file in /dev/shm stands in for
  # it (a loop device on a file has the file's geometry) for mkfs.xfs -N.
  "$PYTHON" "$HERE/export.py" --db "$FSADVISOR_DB" --xfs-geometry /dev/shm \
      --size-bytes $((3 << 30)) --geometry-out "$LOGDIR/shm-loop.xfs_geometry.json"
  "$PYTHON" "$HERE/export.py" --db "$FSADVISOR_DB" --out "$HERE/runs.csv" \
      --shm-log "$LOGDIR/shm-loop.json" --zram-log "$LOGDIR/zram.json" \
      --shm-geometry "$LOGDIR/shm-loop.xfs_geometry.json" \
      --zram-geometry "$LOGDIR/zram.xfs_geometry.json" \
      --zram-comp "$LOGDIR/zram.comp_algorithm" \
      --load-log "$LOGDIR/loadavg-shm-loop.log" --load-log "$LOGDIR/loadavg-zram.log"
  "$PYTHON" "$HERE/export.py" --summary "$HERE/runs.csv" > "$LOGDIR/summary.md"
}

case "$WHAT" in
  shm) run_shm ;;
  zram) run_zram ;;
  export) do_export ;;
  all) run_shm; run_zram; do_export ;;
  *) echo "usage: $0 [shm|zram|all|export]" >&2; exit 2 ;;
esac
