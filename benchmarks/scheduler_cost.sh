#!/usr/bin/env bash
# benchmarks/scheduler_cost.sh — what each blk-mq scheduler adds per request, in series.
#
# Measures 4 KiB direct I/O at queue depth 1 (libaio) on a RAM-backed loop device (a 2 GiB
# file in /dev/shm, attached with direct I/O) under none, mq-deadline, kyber and bfq, the
# schedulers alternating within each of 3 rounds so a drift of the host is not read as a
# scheduler's effect: on the bare device random writes, random reads and writes with an
# fsync each (a write and its flush); then on ext4 on it, writes with an fsync each (the
# data write, the journal's commit writes and flushes) and plain overwrites. Prints one line
# per round and scheduler (IOPS of each job, 3 s each) and the machine's load before and
# after. The per-request figures the model starts from (mechanisms.SCHED_US) come from it.
#
# HAZARDS: needs root. Creates its own loop device on its own file in /dev/shm and formats
# only that device; the trap unmounts, detaches and deletes it. About 2 minutes.
#
# USAGE: sudo benchmarks/scheduler_cost.sh [ROUNDS]
set -euo pipefail

ROUNDS="${1:-3}"
IMG="$(mktemp /dev/shm/fsadvisor-sched-XXXXXX.img)"
MNT="$(mktemp -d /tmp/fsadvisor-sched-mnt-XXXXXX)"
LOOP=""
cleanup() {
  if mountpoint -q "$MNT"; then umount "$MNT" || true; fi
  if [ -n "$LOOP" ]; then losetup -d "$LOOP" || true; fi
  rm -f "$IMG"; rmdir "$MNT" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

truncate -s 2G "$IMG"
LOOP="$(losetup --direct-io=on -f --show "$IMG")"
N="$(basename "$LOOP")"
echo "# load before: $(uptime)"
echo "# $LOOP on $IMG, dio=$(cat "/sys/block/$N/loop/dio"), schedulers: $(cat "/sys/block/$N/queue/scheduler")"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs, kernel $(uname -r), $(fio --version)"

iops() {  # fio job args... -> the job's read+write IOPS, rounded
  fio --output-format=json --name=x --eta=never --time_based=1 --runtime=3s --bs=4k \
      --direct=1 --ioengine=libaio --iodepth=1 --size=512M "$@" 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round(j["read"]["iops"] + j["write"]["iops"]))'
}

for round in $(seq 1 "$ROUNDS"); do
  for s in none mq-deadline kyber bfq; do
    echo "$s" > "/sys/block/$N/queue/scheduler"
    echo "round $round $s raw-randwrite-qd1 $(iops --filename="$LOOP" --rw=randwrite)" \
         "raw-randread-qd1 $(iops --filename="$LOOP" --rw=randread)" \
         "raw-randwrite-fsync1 $(iops --filename="$LOOP" --rw=randwrite --fsync=1)"
  done
done
mkfs.ext4 -q -F "$LOOP"
mount "$LOOP" "$MNT"
for round in $(seq 1 "$ROUNDS"); do
  for s in none mq-deadline kyber bfq; do
    echo "$s" > "/sys/block/$N/queue/scheduler"
    rm -f "$MNT/f"
    echo "round $round $s ext4-randwrite-fsync1 $(iops --filename="$MNT/f" --rw=randwrite --fsync=1 --size=256M)" \
         "ext4-randwrite-qd1-overwrite $(iops --filename="$MNT/f" --rw=randwrite --size=256M)"
  done
done
echo "# load after: $(uptime)"
