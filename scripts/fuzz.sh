#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/*_fuzzer.cc) with clang, ASan and UBSan in build/fuzz,
# checks that the committed seed corpus matches the fixtures, then runs each harness for a fixed
# time starting from its corpus. Any crash, leak, sanitizer report, timeout or out-of-memory is a
# finding: the reproducer is left in build/fuzz/findings/ and the script fails.
# Usage: scripts/fuzz.sh [seconds per harness, default $KILN_FUZZ_SECONDS or 60]
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"

seconds="${1:-${KILN_FUZZ_SECONDS:-60}}"
command -v clang++ >/dev/null || kiln_die "clang++ not found (scripts/apt-packages.txt installs clang)"
.venv/bin/python tools/make_fuzz_corpus.py --check 2>/dev/null || python3 tools/make_fuzz_corpus.py --check

# Under KILN_PRUNE_BUILDS=1 (.ci/run) the objects stay out of ccache and the tree (but for
# findings) is deleted after a clean run: see kiln_prune_build in scripts/common.sh.
if [[ "${KILN_PRUNE_BUILDS:-0}" == 1 ]]; then export CCACHE_DISABLE=1; fi
CXX=clang++ kiln_cmake_build build/fuzz -DKILN_BUILD_FUZZERS=ON -DKILN_SANITIZE=ON \
  -DKILN_BUILD_TESTS=OFF -DKILN_EXCLUDE_REGEX= -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"

mkdir -p build/fuzz/findings
status=0
for src in tests/fuzz/*_fuzzer.cc; do
  name="$(basename "$src" .cc)"
  corpus_name="${name%_fuzzer}"
  work="build/fuzz/corpus/$corpus_name"   # grows as the fuzzer finds new coverage; never committed
  mkdir -p "$work"
  kiln_log "fuzz: $name for ${seconds}s (seeds: tests/fuzz/corpus/$corpus_name)"
  # -rss_limit_mb: the reader may legitimately hold ~1 GiB for a program with large constants.
  if ! ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      "build/fuzz/$name" "$work" "tests/fuzz/corpus/$corpus_name" \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=3072 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="build/fuzz/findings/$name-" \
        >"build/fuzz/$name.log" 2>&1; then
    tail -n 60 "build/fuzz/$name.log"
    kiln_log "fuzz: $name FOUND A PROBLEM (see build/fuzz/$name.log, build/fuzz/findings/)"
    status=1
  else
    grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "build/fuzz/$name.log" |
      tr '\n' ' '
    echo
  fi
done
kiln_log_disk "after build/fuzz"
if ((status == 0)); then kiln_prune_build build/fuzz; fi
exit "$status"
