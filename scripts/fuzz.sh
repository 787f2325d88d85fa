#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/*_fuzzer.cc) with clang, ASan and UBSan in build/asan
# (the tree of the sanitized C++ tests, kiln_build_asan in common.sh: a no-op when
# scripts/cpp_tests.sh asan built it), checks that the committed seed corpus matches the fixtures,
# then runs each harness for a fixed time starting from its corpus. Any crash, leak, sanitizer
# report, timeout or out-of-memory is a finding: the reproducer is left in build/asan/findings/ and
# the script fails.
# Usage: scripts/fuzz.sh [seconds per harness, default $KILN_FUZZ_SECONDS or 60]
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"

seconds="${1:-${KILN_FUZZ_SECONDS:-60}}"
.venv/bin/python tools/make_fuzz_corpus.py --check 2>/dev/null || python3 tools/make_fuzz_corpus.py --check

kiln_build_asan
mkdir -p build/asan/findings
status=0
for src in tests/fuzz/*_fuzzer.cc; do
  name="$(basename "$src" .cc)"
  corpus_name="${name%_fuzzer}"
  work="build/asan/corpus/$corpus_name"   # grows as the fuzzer finds new coverage; never committed
  mkdir -p "$work"
  kiln_log "fuzz: $name for ${seconds}s (seeds: tests/fuzz/corpus/$corpus_name)"
  # -rss_limit_mb: the reader may legitimately hold ~1 GiB for a program with large constants.
  if ! ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      "build/asan/$name" "$work" "tests/fuzz/corpus/$corpus_name" \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=3072 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="build/asan/findings/$name-" \
        >"build/asan/$name.log" 2>&1; then
    tail -n 60 "build/asan/$name.log"
    kiln_log "fuzz: $name FOUND A PROBLEM (see build/asan/$name.log, build/asan/findings/)"
    status=1
  else
    grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "build/asan/$name.log" |
      tr '\n' ' '
    echo
  fi
done
kiln_log_disk "after the fuzzers"
# Under KILN_PRUNE_BUILDS=1 (.ci/run) the tree goes once the harnesses ran clean (the findings stay).
if ((status == 0)); then kiln_prune_build build/asan; fi
exit "$status"
