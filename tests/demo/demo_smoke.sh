#!/bin/sh
# Runs cudactor-demo for a few steps and checks what it prints: every step ran, the summary
# has its figures, the operations spread over the streams, and the weights equal the host's
# reference, with every step submitted and with the steps replayed. Then: weights that
# overflow fail the check, and SIGTERM ends an open-ended run with its summary and a complete
# trace. The backend is CUDACTOR_TEST_BACKEND's (host when
# unset). Usage: demo_smoke.sh path/to/cudactor-demo
set -eu
demo=$1
backend=${CUDACTOR_TEST_BACKEND:-host}
trace=$(mktemp "${TMPDIR:-/tmp}/demo_smoke.XXXXXX.json")
trace2=$(mktemp "${TMPDIR:-/tmp}/demo_smoke.XXXXXX.json")
log=$(mktemp "${TMPDIR:-/tmp}/demo_smoke.XXXXXX.log")
trap 'rm -f "$trace" "$trace2" "$log"' EXIT
# Every step submitted as a graph (--no-replay): each operation counted where it ran.
out=$("$demo" --steps=40 --layers=4 --replicas=3 --width=4096 --streams=3 --metrics-port=0 \
  --cudactor.backend="$backend" --quiet --trace="$trace" --no-replay)
echo "$out"
fail() { echo "demo_smoke: $*" >&2; exit 1; }
echo "$out" | grep -q '26 ops per step' || fail "not 26 ops per step"
echo "$out" | grep -q '^steps  *40$' || fail "not 40 steps"
echo "$out" | grep -Eq '^ops/s  *[1-9][0-9]*$' || fail "no ops/s"
echo "$out" | grep -Eq '^op latency p50 / p99  *[0-9.]+ / [0-9.]+ us$' || fail "no latency"
echo "$out" | grep -Eq '^detection delay  *mean [0-9.]+ us' || fail "no detection delay"
# No dependency is stated but the barrier's; the coordinator infers 32 per step: forward 3
# (each layer above the first after the one below), backward 9 (3 layers above the first x 3
# replicas, after the forward pass below), all-reduce 12 (each after its 3 gradients),
# optimizer 8 (after its all-reduce and the forward pass that read its weights). What the
# step before used has ended when the next is submitted, so it adds none.
echo "$out" | grep -q '^dependencies inferred  *1280 (from declared buffer uses)$' ||
  fail "not every dependency inferred"
# 2 + 4 layers x (3 + 3 replicas) = 26 ops per step (the header says so), one copy before the
# first step, and at the end a release of each of the model's 4 x (3 + 3) + 4 = 28 buffers:
# 40 x 26 + 1 + 28 ops on the three streams.
# stream, ops, kernels, transfers, failed, busy %, running % (timed: the trace turns timing on)
# The step barrier sits on all three streams (device mode) and is counted on its first; the
# third stream's role (coordination, the workload strategy's) has no other work since the
# barrier became a real one, so two streams show operations and all three are listed.
streams=$(echo "$out" | grep -Ec '^#[0-9]+ +[1-9][0-9]* +[0-9]+ +[0-9]+ +0 +[0-9.]+ +[0-9.]+$') || true
[ "$streams" -ge 2 ] || fail "expected at least 2 streams with work, found $streams"
listed=$(echo "$out" | grep -Ec '^#[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +0 +[0-9.]+ +[0-9.]+$') || true
[ "$listed" -eq 3 ] || fail "expected 3 streams listed, found $listed"
total=$(echo "$out" | awk '/^#[0-9]+ / { s += $2 } END { print s }')
[ "$total" -eq 1069 ] || fail "expected 1069 ops on the streams, found $total"
# Kernels: 4 layers x 40 steps x (forward + 3 backward + optimizer) = 800; 41 copies.
kernels=$(echo "$out" | awk '/^#[0-9]+ / { s += $3 } END { print s }')
[ "$kernels" -eq 800 ] || fail "expected 800 kernels, found $kernels"
transfers=$(echo "$out" | awk '/^#[0-9]+ / { s += $4 } END { print s }')
[ "$transfers" -eq 41 ] || fail "expected 41 transfers, found $transfers"
# Per operation name: count, queued, on stream, run and longest run.
echo "$out" | grep -Eq '^backward 2 +120 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' || fail "no backward 2 totals"
echo "$out" | grep -Eq '^step barrier +40 ' || fail "no barrier totals"
# The trace: one complete event per operation, and the JSON closed.
events=$(grep -c '"ph":"X"' "$trace") || true
[ "$events" -eq 1069 ] || fail "expected 1069 operations in the trace (the releases too), found $events"
tail -c 4 "$trace" | grep -q ']}' || fail "the trace is not closed"
echo "$out" | grep -Eq 'largest difference from the host reference 0: exact$' ||
  fail "weights differ from the host reference"

# By default the third step on is a replay of the step recorded once per batch buffer: 38
# replays, each one operation named "training step" in the profile, and the same weights.
out=$("$demo" --steps=40 --layers=4 --replicas=3 --width=4096 --streams=3 --metrics-port=0 \
  --cudactor.backend="$backend" --quiet)
echo "$out"
echo "$out" | grep -q '^steps  *40$' || fail "replay: not 40 steps"
echo "$out" | grep -Eq '^steps replayed  *38 ' || fail "replay: not 38 steps replayed"
echo "$out" | grep -Eq '^training step +38 ' || fail "replay: no profile row for the replays"
echo "$out" | grep -Eq 'largest difference from the host reference 0: exact$' ||
  fail "replay: weights differ from the host reference"

# A learning rate that makes the weights overflow: NaN compares false with everything, so
# the check must say so and fail rather than pass over it.
if bad=$("$demo" --steps=3 --layers=4 --replicas=2 --width=1024 --streams=2 --metrics-port=0 \
  --cudactor.backend="$backend" --quiet --learning-rate=1e30); then
  echo "$bad"
  fail "weights that are not finite passed the check"
fi
echo "$bad" | grep -q 'WRONG (not finite)$' || { echo "$bad"; fail "no 'not finite' verdict"; }

# SIGTERM, like SIGINT: the run ends early with its summary, a valid check and a closed trace.
"$demo" --steps=0 --duration=600 --layers=2 --replicas=2 --width=1024 --streams=2 \
  --metrics-port=0 --cudactor.backend="$backend" --quiet --trace="$trace2" >"$log" 2>&1 &
pid=$!
tries=0
until grep -q 'streams: ' "$log"; do
  tries=$((tries + 1))
  [ "$tries" -le 600 ] || { kill -9 "$pid"; fail "the demo did not start"; }
  sleep 0.1
done
sleep 1
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
cat "$log"
[ "$rc" -eq 0 ] || fail "SIGTERM: exit status $rc"
grep -Eq '^steps  *[1-9][0-9]*$' "$log" || fail "SIGTERM: no summary"
grep -Eq 'largest difference from the host reference 0: exact$' "$log" ||
  fail "SIGTERM: the weights were not checked"
tail -c 4 "$trace2" | grep -q ']}' || fail "SIGTERM: the trace is not closed"

# --nodes: data-parallel across node processes (the cudactor-node this build made), a real
# all-reduce between them, every node's weights the reference's bit for bit: each step
# replayed on every node from the second on, its all-reduce inside the step, and with
# --no-replay every step submitted as a graph (the demo checks each node's operation count
# either way: four operations a step submitted, one a step replayed).
# On CUDA one node: NCCL takes one rank per GPU, and the GPU machine has one.
n=2
[ "$backend" = cuda ] && n=1
for replay in "" --no-replay; do
  out=$("$demo" --nodes=$n --steps=3 --width=4096 --backend="$backend" $replay)
  echo "$out"
  echo "$out" | grep -q "^cudactor-demo: 3 steps on $n nodes, 4096 weights" ||
    fail "--nodes $replay: no header"
  [ "$(echo "$out" | grep -Ec '^worker-[01]: weights equal the reference \(0 of 4096 differ')" = $n ] ||
    fail "--nodes $replay: a node's weights are not the reference's"
  given=6  # 4 + 2 replays, and 3 buffer operations, less the 3 below
  [ -n "$replay" ] && given=12
  [ "$(echo "$out" | grep -Ec "cudactor_operations_completed_total $((given + 3)) \(given")" = $n ] ||
    fail "--nodes $replay: the nodes did not run what they were given"
  echo "$out" | grep -q '^cudactor-demo: ok$' || fail "--nodes $replay: not ok"
done
echo "demo_smoke: ok"
