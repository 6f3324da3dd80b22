#!/bin/sh
# Runs one example for a short while and checks what it prints, not only its exit status:
# the figures it reports and its check of the numbers against the host's arithmetic.
# The backend is CUDACTOR_TEST_BACKEND's (host when unset); on CUDA the examples launch their
# kernels (demo/kernels.cu) and the host's arithmetic checks the device's.
# Usage: example_smoke.sh pipeline|training_step|barrier|distributed_training path/to/example
set -eu
name=$1
program=$2
backend=${CUDACTOR_TEST_BACKEND:-host}
fail() { echo "$name smoke: $*" >&2; exit 1; }
common="--cudactor.backend=$backend --cudactor.metrics.no-exposer"
case $name in
  pipeline)
    # shellcheck disable=SC2086
    out=$("$program" --chunks=6 --width=16384 --rounds=8 --repeat=2 $common)
    echo "$out"
    echo "$out" | grep -q '^pipeline: 6 chunks of 16384 floats' || fail "no header"
    echo "$out" | grep -Eq '^1  *[0-9]+\.[0-9]+$' || fail "no time for one stream"
    echo "$out" | grep -Eq '^3  *[0-9]+\.[0-9]+$' || fail "no time for three streams"
    echo "$out" | grep -Eq '^speedup of 3 streams over 1: [0-9]+\.[0-9]+x$' || fail "no speedup"
    # The program states no dependency: copy in -> compute -> copy out of each chunk, two
    # per chunk, all inferred from the buffers the operations declare.
    echo "$out" | grep -q '^dependencies inferred from declared buffer uses: 12 (1 stream), 12 (3 streams)$' ||
      fail "not every dependency inferred"
    # x = (i % 1024) / 256 - 2 sums to -2 over each period of 1024 values, and y = x times
    # (1 + 8 x 0.5) = 5: 96 periods give -960.
    echo "$out" | grep -q '^result: sum -960.000 over 98304 values; every value equals the host reference$' ||
      fail "wrong result"
    ;;
  training_step)
    # shellcheck disable=SC2086
    # Every step submitted as a graph (--no-replay): each operation's inferred dependencies.
    out=$("$program" --steps=12 --no-replay $common)
    echo "$out"
    echo "$out" | grep -q "^training_step: 12 steps of 22 operations on $backend: requested" || fail "no header"
    # 25 per step, none stated: forward 3 (each layer after the one below), backward 6 (per
    # layer above the first and replica, after the forward pass below), all-reduce 8 (after
    # each gradient), optimizer 8 (after its all-reduce and the forward pass that read its
    # weights). Those on the step before have ended when the next is submitted.
    echo "$out" | grep -q '^dependencies inferred from declared buffer uses: 300$' ||
      fail "not every dependency inferred"
    echo "$out" | grep -Eq '^after 12 steps: weight sum [0-9.]+, largest difference from the host 0$' ||
      fail "weights differ from the host reference"
    # By default the third step on is a replay of the step recorded once per batch buffer.
    # shellcheck disable=SC2086
    out=$("$program" --steps=12 $common)
    echo "$out"
    echo "$out" | grep -q '^steps replayed: 10$' || fail "not 10 steps replayed"
    echo "$out" | grep -Eq '^after 12 steps: weight sum [0-9.]+, largest difference from the host 0$' ||
      fail "replayed: weights differ from the host reference"
    ;;
  barrier)
    # shellcheck disable=SC2086
    out=$("$program" --rounds=15 --width=2048 --cudactor.streams=3 $common)
    echo "$out"
    echo "$out" | grep -q '^barrier: 15 rounds over 3 streams, 2048 floats each$' || fail "no header"
    echo "$out" | grep -Eq '^15 barriers crossed, mean wait [0-9.]+ us$' || fail "no crossings"
    echo "$out" | grep -Eq '^result: sum [0-9.]+; every value equals the host reference$' ||
      fail "values differ from the host reference"
    ;;
  distributed_training)
    # Starts its own cudactor-node processes (each with its own metrics port) and stops them.
    # On CUDA one node: NCCL takes one rank per GPU, and the GPU machine has one.
    n=3
    [ "$backend" = cuda ] && n=1
    out=$("$program" --nodes=$n --steps=4 --step-us=5000 --node-backend="$backend")
    echo "$out"
    echo "$out" | grep -q "^distributed_training: 4 steps on $n nodes" || fail "no header"
    [ "$(echo "$out" | grep -Ec "^worker-[0-2]: node 127\.0\.0\.1:[0-9]+, .*, $backend: requested")" = $n ] ||
      fail "not every node on the $backend backend"
    [ "$(echo "$out" | grep -Ec '^ +[1-4] +[0-9.]+ +[0-9.]+$')" = 4 ] || fail "not 4 steps"
    [ "$(echo "$out" | grep -Ec '^worker-[0-2]: weights equal the reference \(0 of 16384 differ')" = $n ] ||
      fail "a node's weights are not the single-process reference's"
    # Step 1 submitted (4 operations), steps 2-4 replayed (one each), 3 buffer operations; an
    # all-reduce a step (on CUDA a replay's counted at each launch of its graph).
    [ "$(echo "$out" | grep -Ec '^worker-[0-2]: cudactor_operations_completed_total 10 \(given 10\), cudactor_collective_operations_total 4 \(given 4\)$')" = $n ] ||
      fail "a node's metrics disagree with the work it was given"
    echo "$out" | grep -q '^distributed_training: ok$' || fail "not ok"
    ;;
  *) fail "unknown example" ;;
esac
echo "$name smoke: ok"
