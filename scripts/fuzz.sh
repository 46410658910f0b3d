#!/usr/bin/env bash
# Fuzz roce-net's parsers of outside input (docs/fuzzing.md).
#
#   scripts/fuzz.sh list                 the targets
#   scripts/fuzz.sh smoke [SECS]         build (dev profile) and run every target
#                                        SECS seconds (default 5) from the corpus
#                                        (what scripts/test.sh runs in CI)
#   scripts/fuzz.sh long SECS [TARGET..] release build, SECS seconds per target,
#                                        new inputs kept in fuzz/corpus/<target>
#   scripts/fuzz.sh minimize [TARGET..]  shrink fuzz/corpus/<target> to the inputs
#                                        that keep its coverage (libFuzzer -merge)
#
# Works on a stable toolchain: it builds with plain cargo and the flags
# cargo-fuzz 0.13 passes for `--sanitizer none` (libFuzzer's coverage
# instrumentation, `--cfg fuzzing`), so cargo-fuzz need not be installed. With
# cargo-fuzz installed and ASAN=1, `long` runs `cargo fuzz run` with
# AddressSanitizer instead (RUSTC_BOOTSTRAP=1 lets a stable rustc take the
# sanitizer flag where it is not stable yet).
#
# Inputs: fuzz/seeds/<target>/ (hand-made and captured, committed) and
# fuzz/corpus/<target>/ (what long runs kept, minimized, committed). A crash
# stops the run with the input in $FUZZ_OUT/<target>/crash-*; turn it into a
# regression test by adding the file to fuzz/seeds/<target>/ (the library's
# unit tests replay every seed and corpus file) and fixing the parser.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(sysfs_attribute rt_tables policy_yaml policy_json snapshot_json plan_json journal netlink)
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
FUZZ_OUT="${FUZZ_OUT:-${TMPDIR:-/tmp}/roce-net-fuzz}"
# Inputs larger than the biggest seed are never needed to reach a parser's
# states; 256 KiB keeps snapshots in.
MAX_LEN=262144
# Its own target directory (the instrumented build shares nothing with the
# workspace's), under $CARGO_TARGET_DIR when that is set.
FUZZ_TARGET="${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/fuzz}"
FUZZ_TARGET="${FUZZ_TARGET:-fuzz/target}"

flags() {
  local f="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
  f+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
  f+=" -Cllvm-args=-sanitizer-coverage-pc-table"
  f+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
  f+=" -Cllvm-args=-sanitizer-coverage-stack-depth"
  f+=" --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
  echo "$f"
}

build() { # build PROFILE(dev|release)
  local prof=()
  [ "$1" = release ] && prof=(--release)
  RUSTFLAGS="$(flags)" cargo build --manifest-path fuzz/Cargo.toml --target "$TRIPLE" \
    --target-dir "$FUZZ_TARGET" \
    --locked "${prof[@]}" --bins -q
}

bin() { # bin PROFILE TARGET
  local dir=debug
  [ "$1" = release ] && dir=release
  echo "$FUZZ_TARGET/$TRIPLE/$dir/$2"
}

run_one() { # run_one PROFILE TARGET SECS KEEP(0|1)
  local prof=$1 t=$2 secs=$3 keep=$4
  local out="$FUZZ_OUT/$t"
  rm -rf "$out"
  mkdir -p "$out/new"
  # The first directory receives new inputs; the committed corpus is read.
  mkdir -p "fuzz/corpus/$t"
  local dirs=("$out/new" "fuzz/corpus/$t" "fuzz/seeds/$t")
  [ "$keep" = 1 ] && dirs=("fuzz/corpus/$t" "fuzz/seeds/$t")
  local log="$out/log"
  if ! "$(bin "$prof" "$t")" -max_total_time="$secs" -max_len="$MAX_LEN" -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="$out/" -print_final_stats=1 "${dirs[@]}" \
      >"$log" 2>&1; then
    echo "fuzz target $t FAILED; input and log in $out:" >&2
    tail -40 "$log" >&2
    return 1
  fi
  local execs cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '  %-16s %6ss %10s execs  cov %s\n' "$t" "$secs" "${execs:-?}" "${cov:-?}"
}

case "${1:-smoke}" in
  list)
    printf '%s\n' "${TARGETS[@]}"
    ;;
  smoke)
    secs="${2:-5}"
    start=$(date +%s)
    build dev
    echo "fuzz targets built in $(( $(date +%s) - start ))s; $secs s each:"
    for t in "${TARGETS[@]}"; do run_one dev "$t" "$secs" 0; done
    ;;
  long)
    secs="${2:?seconds per target}"
    shift 2
    ts=("$@")
    [ ${#ts[@]} -eq 0 ] && ts=("${TARGETS[@]}")
    if [ "${ASAN:-0}" = 1 ] && command -v cargo-fuzz >/dev/null; then
      for t in "${ts[@]}"; do
        RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz "$t" -- -max_total_time="$secs" \
          -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      done
    else
      build release
      for t in "${ts[@]}"; do run_one release "$t" "$secs" 1; done
    fi
    ;;
  minimize)
    shift
    ts=("$@")
    [ ${#ts[@]} -eq 0 ] && ts=("${TARGETS[@]}")
    build release
    for t in "${ts[@]}"; do
      new="$FUZZ_OUT/$t.min"
      rm -rf "$new" && mkdir -p "$new"
      mkdir -p "fuzz/corpus/$t"
      # Keep what adds coverage beyond the hand-written seeds.
      "$(bin release "$t")" -merge=1 -max_len="$MAX_LEN" "$new" "fuzz/seeds/$t" \
        "fuzz/corpus/$t" >/dev/null 2>&1
      rm -f fuzz/corpus/"$t"/*
      # libFuzzer names merged inputs by their SHA-1: leave out the seeds.
      seeds=$(sha1sum fuzz/seeds/"$t"/* | cut -d' ' -f1)
      for f in "$new"/*; do
        [ -e "$f" ] || continue
        grep -qx "$(basename "$f")" <<<"$seeds" || cp "$f" "fuzz/corpus/$t/"
      done
      echo "  $t: $(ls "fuzz/corpus/$t" | wc -l) inputs, $(du -sh "fuzz/corpus/$t" | cut -f1)"
    done
    ;;
  *)
    echo "usage: scripts/fuzz.sh list | smoke [SECS] | long SECS [TARGET...] | minimize [TARGET...]" >&2
    exit 2
    ;;
esac
