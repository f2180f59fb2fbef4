#!/usr/bin/env bash
# Builds the fuzz preset and runs every libFuzzer target for SECONDS (default 20) each on a copy
# of its seed corpus; with FUZZ_RUNS=N instead a fixed number of inputs from a fixed seed (what
# test.sh does: a reproducible smoke run). Exit status non-zero if any target finds a crash, a leak or UB; the
# reproducer is left in build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
mkdir -p build/fuzz/artifacts
status=0
for t in msgpack thinc_bytes npy lithe_file onnx tfjs gunzip; do
  work=$(mktemp -d)
  if [ "$t" = lithe_file ]; then build/fuzz/fuzz/make_lithe_seeds "$work"; else cp fuzz/corpus/$t/* "$work"/; fi
  if [ -d fuzz/regressions/$t ]; then  # inputs that once crashed must now pass
    build/fuzz/fuzz/fuzz_$t fuzz/regressions/$t/* >build/fuzz/regress_$t.log 2>&1 || { tail -30 build/fuzz/regress_$t.log; status=1; }
  fi
  echo "=== fuzz_$t ==="
  if [ -n "${FUZZ_RUNS:-}" ]; then limit="-runs=$FUZZ_RUNS -seed=1"; else limit="-max_total_time=$seconds"; fi
  if ! build/fuzz/fuzz/fuzz_$t $limit -max_len=4096 -print_final_stats=1 \
       -artifact_prefix=build/fuzz/artifacts/$t- "$work" 2>build/fuzz/fuzz_$t.log; then
    tail -40 build/fuzz/fuzz_$t.log
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" build/fuzz/fuzz_$t.log | sed "s/^/fuzz_$t /" || true
  rm -rf "$work"
done
exit $status
