#!/usr/bin/env bash
# Runs the libFuzzer targets of Fuzz/ (docs/fuzzing.md), built by `make fuzz-build`.
#   scripts/fuzz.sh run [TARGET...]    each target for FUZZ_SECONDS (600), FUZZ_JOBS at a time (1)
#   scripts/fuzz.sh merge [TARGET...]  minimizes the committed corpus together with what runs found
# The committed corpus Fuzz/corpus/<target> is only read; new inputs go to Fuzz/.build/fuzz/<target>/corpus,
# crashes, leaks and hangs of the last run to Fuzz/.build/fuzz/<target>/artifacts/, its output to .../fuzz.log.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"; shift || true
seconds="${FUZZ_SECONDS:-600}"
jobs="${FUZZ_JOBS:-1}"
bin="Fuzz/.build/release"
work="Fuzz/.build/fuzz"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzJSON FuzzJWS FuzzPubSub FuzzForm FuzzSenders)

dictionary() {
  case "$1" in
    FuzzJWS) echo Fuzz/dict/jws.dict ;;
    FuzzForm) echo Fuzz/dict/form.dict ;;
    *) echo Fuzz/dict/json.dict ;;
  esac
}

# One target: new finds into the scratch corpus (first folder), the committed one read only.
# -timeout makes a slow input a reported hang instead of a stall; ASan's leak check is on by default.
# Swift's own backtracer is off: it trips ASan while reading memory, libFuzzer prints the stack.
run_one() {
  local target="$1" dir="$work/$1"
  rm -rf "$dir/artifacts" "$dir/failed"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  if SWIFT_BACKTRACE=enable=no nice -n "${FUZZ_NICE:-19}" "$bin/$target" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
      -dict="$(dictionary "$target")" -artifact_prefix="$dir/artifacts/" \
      "$dir/corpus" "Fuzz/corpus/$target" > "$dir/fuzz.log" 2>&1; then
    echo "$target: ok, $(grep -E '^#[0-9]+[[:space:]]+DONE' "$dir/fuzz.log" | tail -1)"
  else
    echo "$target: FAILED, see $dir/fuzz.log; artifacts:"
    ls -1 "$dir/artifacts" | sed "s|^|  $dir/artifacts/|"
    grep -m 3 -E 'ERROR|invariant broken|Fatal error' "$dir/fuzz.log" | sed 's/^/  /'
    touch "$dir/failed"
  fi
}

# The committed corpus keeps every covered edge (libFuzzer's cov) with the fewest inputs, not every
# hit-count feature (ft): that is thousands of files; the full set stays in the scratch corpus.
merge_one() {
  local target="$1" dir="$work/$1"
  rm -rf "$dir/merged" && mkdir -p "$dir/merged" "$dir/corpus"
  SWIFT_BACKTRACE=enable=no "$bin/$target" -merge=1 -set_cover_merge=1 -use_counters=0 "$dir/merged" "Fuzz/corpus/$target" "$dir/corpus" > "$dir/merge.log" 2>&1
  rm -rf "Fuzz/corpus/$target" && mv "$dir/merged" "Fuzz/corpus/$target"
  echo "$target: $(ls "Fuzz/corpus/$target" | wc -l) files, $(du -sh --apparent-size "Fuzz/corpus/$target" | cut -f1)"
}

for target in "${targets[@]}"; do
  [ -x "$bin/$target" ] || { echo "$bin/$target is not built: make fuzz-build"; exit 2; }
done
case "$mode" in
  run)
    echo "fuzzing ${targets[*]} for ${seconds}s each, $jobs at a time (logs and artifacts under $work)"
    for target in "${targets[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
      run_one "$target" &
    done
    wait
    failed=0
    for target in "${targets[@]}"; do [ ! -e "$work/$target/failed" ] || failed=1; done
    [ "$failed" -eq 0 ] || { echo "fuzzing found problems (artifacts above)"; exit 1; }
    ;;
  merge)
    for target in "${targets[@]}"; do merge_one "$target"; done
    ;;
  *) echo "usage: $0 run|merge [TARGET...]"; exit 2 ;;
esac
