#!/bin/sh
# Runs the program of docs/getting-started.md and checks that it prints what the page says:
# load first, left and right in either order, combine last, all completed. The backend is
# CUDACTOR_TEST_BACKEND's (host when unset).
set -eu
out=$("$1" --cudactor.backend="${CUDACTOR_TEST_BACKEND:-host}" --cudactor.metrics.no-exposer)
echo "$out"
expected_order=$(echo "$out" | grep ' ran$' | sed 's/ ran$//' | tr '\n' ' ')
case "$expected_order" in
  "load left right combine " | "load right left combine ") ;;
  *) echo "getting-started: unexpected order: $expected_order" >&2; exit 1 ;;
esac
echo "$out" | grep -q '^all completed: yes$' || { echo "getting-started: not all completed" >&2; exit 1; }
echo "getting-started: ok"
