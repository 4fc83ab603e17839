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
#   REPS (3), RUNTIME (3 s), SIZE (256M), LOGDIR (next to the store), MATRIX (base:
#   runs.csv; mechanisms: runs-mechanisms.csv, see below).
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

# MATRIX=base (default) is the 13-configuration matrix of runs.csv; MATRIX=mechanisms is the
# second matrix of runs-mechanisms.csv: the mechanisms the first one cannot show (compression
# by algorithm, 1 KiB blocks under 4 KiB I/O, data=journal and nodatacow beside them, fsync
# from several writers, large random reads), on the same two devices.
MATRIX="${MATRIX:-base}"
SCHEDULERS="none"  # a matrix below may measure several
# btrfs gets an explicit nodiscard (kernel >= 6.2 mounts btrfs with discard=async by default;
# the probe's own default btrfs config says nodiscard too, an explicit --config does not add
# it). ext4 and xfs do not discard by default.
case "$MATRIX" in
  base)
    OUT="runs.csv"; TAG=""
    WORKLOADS=()          # every micro workload
    PROFILES=()
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
    ) ;;
  mechanisms)
    OUT="runs-mechanisms.csv"; TAG="-mechanisms"
    WORKLOADS=(--workloads 4k-randwrite-qd32,128k-write-qd8,meta-create)
    # log-append: 4 writers appending with an fsync every 32 records (fsync from several
    # writers); fio-randread-128k-j4: 128 KiB random reads from 4 processes.
    PROFILES=(log-append fio-randread-128k-j4)
    CONFIGS=(
      '{"filesystem":"ext4"}'
      '{"filesystem":"ext4","mount":["data=journal"]}'
      '{"filesystem":"ext4","mkfs":{"block_size":1024}}'
      '{"filesystem":"xfs"}'
      '{"filesystem":"xfs","mkfs":{"block_size":1024}}'
      '{"filesystem":"btrfs","mount":["nodiscard"]}'
      '{"filesystem":"btrfs","mount":["nodiscard","nodatacow"]}'
      '{"filesystem":"btrfs","mount":["nodiscard","compress=lzo"]}'
      '{"filesystem":"btrfs","mount":["nodiscard","compress=zstd:1"]}'
      '{"filesystem":"btrfs","mount":["nodiscard","compress=zlib"]}'
    ) ;;
  writers)
    # log-append with 1, 2, 4 and 8 writers (the same 64 KiB appends and fsync every 32 per
    # writer; profiles/writers.toml beside the preset): how an fsync's cost grows with the
    # writers fsyncing at once, which the mechanisms matrix measured at four only. The micro
    # part is the raw baseline's 4 KiB random and 128 KiB sequential writes, with the
    # configurations on them as the levels' anchor.
    OUT="runs-writers.csv"; TAG="-writers"
    WORKLOADS=(--workloads 4k-randwrite-qd32,128k-write-qd8)
    PROFILES=("$HERE/profiles/writers.toml:log-append-1w" "$HERE/profiles/writers.toml:log-append-2w"
              log-append "$HERE/profiles/writers.toml:log-append-8w")
    CONFIGS=(
      '{"filesystem":"ext4"}'
      '{"filesystem":"xfs"}'
      '{"filesystem":"btrfs","mount":["nodiscard"]}'
      '{"filesystem":"btrfs","mount":["nodiscard","nodatacow"]}'
    ) ;;
  schedulers)
    # The blk-mq schedulers on the RAM-backed loop (zram has no scheduler, so this matrix is
    # shm only: `collect.sh shm`, then `export`): what a scheduler adds per request -- data
    # writes and reads, and an fsync's commit writes and flushes -- where the device costs
    # almost nothing, with the raw device under each scheduler as the anchor.
    OUT="runs-schedulers.csv"; TAG="-schedulers"
    WORKLOADS=(--workloads 4k-randread-qd32,4k-randwrite-qd32,4k-randwrite-fsync1,128k-write-qd8)
    PROFILES=()
    SCHEDULERS="none,mq-deadline,kyber,bfq"
    CONFIGS=(
      '{"filesystem":"ext4"}'
      '{"filesystem":"xfs"}'
      '{"filesystem":"btrfs","mount":["nodiscard"]}'
    ) ;;
  *) echo "MATRIX must be base, mechanisms, writers or schedulers" >&2; exit 2 ;;
esac
COMMON=(--schedulers "$SCHEDULERS" --reps "$REPS" --runtime "$RUNTIME" --cooldown 0 --size "$SIZE"
        --energy estimate --json)
for c in "${CONFIGS[@]}"; do COMMON+=(--config "$c"); done

# One class's probes on one device (TARGET...: the probe's device arguments): the micro
# matrix, then each profile's full matrix; summaries in $LOGDIR/<class>$TAG[-<profile>].json
# (a profile given as FILE.toml:NAME by its NAME).
run_probes() {
  local cls="$1"; shift
  local rc=0
  "$FSADVISOR" probe "$@" "${COMMON[@]}" "${WORKLOADS[@]}" \
      > "$LOGDIR/$cls$TAG.json" 2> "$LOGDIR/$cls$TAG.log" || rc=$?
  [ "$rc" -le 1 ] || return "$rc"
  for p in "${PROFILES[@]}"; do
    "$FSADVISOR" probe "$@" "${COMMON[@]}" --no-micro --full --profile "$p" \
        > "$LOGDIR/$cls$TAG-${p##*:}.json" 2> "$LOGDIR/$cls$TAG-${p##*:}.log" || rc=$?
    [ "$rc" -le 1 ] || return "$rc"
  done
  return 0
}
# Every summary of a class, as export.py's repeated --shm-log/--zram-log arguments.
# A class this matrix did not measure (the schedulers matrix has no zram) has none.
logs_of() {
  local flag="$1" cls="$2" f p
  local files=("$LOGDIR/$cls$TAG.json")
  for p in "${PROFILES[@]}"; do files+=("$LOGDIR/$cls$TAG-${p##*:}.json"); done
  for f in "${files[@]}"; do
    if [ -e "$f" ]; then printf '%s\n' "$flag" "$f"; fi
  done
}

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
  start_sampler "$LOGDIR/loadavg-shm-loop$TAG.log"
  run_probes shm-loop --scratch 3G --scratch-dir /dev/shm || rc=$?
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
  start_sampler "$LOGDIR/loadavg-zram$TAG.log"
  run_probes zram "$dev" --yes-wipe "$dev" || rc=$?
  stop_sampler
  cat "/sys/block/zram$ZRAM_ID/mm_stat" > "$LOGDIR/zram.mm_stat" 2>/dev/null || true
  # The AG count mkfs.xfs applies on this very device (-N: prints the geometry, writes nothing).
  "$PYTHON" "$HERE/export.py" --db "$FSADVISOR_DB" --xfs-geometry "$dev" \
      --geometry-out "$LOGDIR/zram$TAG.xfs_geometry.json" || true
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
      --size-bytes $((3 << 30)) --geometry-out "$LOGDIR/shm-loop$TAG.xfs_geometry.json"
  local logs=()
  mapfile -t logs < <(logs_of --shm-log shm-loop; logs_of --zram-log zram)
  "$PYTHON" "$HERE/export.py" --db "$FSADVISOR_DB" --out "$HERE/$OUT" "${logs[@]}" \
      --shm-geometry "$LOGDIR/shm-loop$TAG.xfs_geometry.json" \
      --zram-geometry "$LOGDIR/zram$TAG.xfs_geometry.json" \
      --zram-comp "$LOGDIR/zram.comp_algorithm" \
      --load-log "$LOGDIR/loadavg-shm-loop$TAG.log" --load-log "$LOGDIR/loadavg-zram$TAG.log"
  "$PYTHON" "$HERE/export.py" --summary "$HERE/$OUT" > "$LOGDIR/summary$TAG.md"
}

case "$WHAT" in
  shm) run_shm ;;
  zram) run_zram ;;
  export) do_export ;;
  all) run_shm; run_zram; do_export ;;
  *) echo "usage: $0 [shm|zram|all|export]" >&2; exit 2 ;;
esac
