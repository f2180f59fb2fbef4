#!/usr/bin/env bash
# Builds the fuzz preset and runs every libFuzzer target for SECONDS (default 20) each on a copy
# of its seed corpus; with FUZZ_RUNS=N instead a fixed number of inputs from a fixed seed (what
# test.sh does: a reproducible smoke run). Exit status non-zero if any target finds a crash, a leak or UB; the
# reproducer is left in build/fuzz/artifacts/. FUZZ_TARGETS="onnx json" runs those targets only
# (the long run splits the targets into lanes that run side by side).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
mkdir -p build/fuzz/artifacts
status=0
for t in ${FUZZ_TARGETS:-msgpack thinc_bytes npy lithe_file onnx tfjs gunzip optimizer_state json paths idx}; do
  work=$(mktemp -d)
  case $t in
    lithe_file) build/fuzz/fuzz/make_lithe_seeds "$work" ;;
    optimizer_state) seeds=$(mktemp -d); build/fuzz/fuzz/make_lithe_seeds "$seeds" "$work"; rm -rf "$seeds" ;;
    paths)  # mode 0/1: .lithe files mapped / read; 2: ONNX + external data; 3: TF.js shards
      seeds=$(mktemp -d); build/fuzz/fuzz/make_lithe_seeds "$seeds"
      for f in "$seeds"/*.lithe; do
        { printf '\000'; cat "$f"; } >"$work/map_$(basename "$f")"
        { printf '\001'; cat "$f"; } >"$work/read_$(basename "$f")"
      done
      rm -rf "$seeds"; cp fuzz/corpus/paths/* "$work"/ ;;
    *) cp fuzz/corpus/$t/* "$work"/ ;;
  esac
  # the hostile corpus (fuzz/hostile/MANIFEST): regression inputs for the readers they target
  case $t in
    onnx) cp fuzz/hostile/*.onnx "$work"/ ;;
    lithe_file) cp fuzz/hostile/*.lithe "$work"/ ;;
    thinc_bytes) cp fuzz/hostile/thinc_*.bin "$work"/ ;;
    optimizer_state) cp fuzz/hostile/*.state "$work"/ ;;
  esac
  if [ -d fuzz/regressions/$t ]; then  # inputs that once crashed must now pass
    build/fuzz/fuzz/fuzz_$t fuzz/regressions/$t/* >build/fuzz/regress_$t.log 2>&1 || { tail -30 build/fuzz/regress_$t.log; status=1; }
  fi
  echo "=== fuzz_$t ==="
  runs=${FUZZ_RUNS:-}
  # the file-writing targets run fewer of the smoke's inputs (each input is files written and a
  # model loaded by path: paths runs some 60 inputs a second under ASan, idx some 800)
  if [ -n "$runs" ] && [ $t = idx ]; then runs=$((runs / 10)); fi
  if [ -n "$runs" ] && [ $t = paths ]; then runs=$((runs / 100)); fi
  if [ -n "$runs" ]; then limit="-runs=$runs -seed=1"; else limit="-max_total_time=$seconds"; fi
  if ! build/fuzz/fuzz/fuzz_$t $limit -max_len=4096 -print_final_stats=1 \
       -artifact_prefix=build/fuzz/artifacts/$t- "$work" 2>build/fuzz/fuzz_$t.log; then
    tail -40 build/fuzz/fuzz_$t.log
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" build/fuzz/fuzz_$t.log | sed "s/^/fuzz_$t /" || true
  rm -rf "$work"
done
exit $status
