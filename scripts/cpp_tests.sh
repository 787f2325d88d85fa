#!/usr/bin/env bash
# Builds and runs the C++ tests in up to three builds:
#   build/asan  clang with ASan + UBSan (KILN_SANITIZE=ON), -O1 -g1 with assertions on, leak checking
#               on; the libFuzzer harnesses are built in the same tree (kiln_build_asan in common.sh)
#               and scripts/fuzz.sh runs them;
#   build/tsan  ThreadSanitizer (KILN_TSAN=ON), -O1 -g1: the runtime, stress and PJRT tests, where
#               Kiln's threads meet (work queues, ParallelFor, async execute, events);
#   build/dev   the normal Release (-O2) build with the wheel's OpenBLAS, i.e. what ships.
# asan and dev run every tests/cpp/*_test.cc; dev also the export check of libkiln_pjrt.so.
# The instrumented trees link with lld when it is installed.
# Usage: scripts/cpp_tests.sh [asan|tsan|dev]...   (default: asan tsan dev)
# Under KILN_PRUNE_BUILDS=1 (.ci/run) build/tsan is deleted once its tests pass (build/asan by
# scripts/fuzz.sh, after the harnesses ran), and both are compiled without ccache (their objects
# would only fill it); see kiln_prune_build.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KILN_ROOT"

variants=("$@")
((${#variants[@]})) || variants=(asan tsan dev)

for v in "${variants[@]}"; do
  case "$v" in
    asan)
      kiln_build_asan
      kiln_log "ctest: build/asan"
      # Leak checking is on: LeakSanitizer works on these machines (checked on Debian bookworm).
      ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      LSAN_OPTIONS="suppressions=$KILN_ROOT/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
        ctest --test-dir build/asan -j "$KILN_JOBS" --output-on-failure --no-tests=error
      kiln_log_disk "after build/asan"
      # build/asan is pruned by scripts/fuzz.sh, whose harnesses are built in the same tree.
      ;;
    tsan)
      # Only the test files whose suites it runs are built (KILN_TEST_SOURCES_REGEX).
      kiln_sanitizer_build build/tsan -DKILN_BUILD_TESTS=ON -DKILN_SANITIZE=OFF -DKILN_TSAN=ON \
        -DKILN_TEST_SOURCES_REGEX='/(parallel_stress|runtime|partition|pjrt_[a-z_]+)_test\.cc$' \
        -DKILN_EXCLUDE_REGEX= -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
      kiln_log "ctest: build/tsan (runtime, stress and PJRT tests)"
      # OpenBLAS's own threads are not instrumented: scripts/tsan.supp names what is theirs.
      TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$KILN_ROOT/scripts/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
        ctest --test-dir build/tsan -j "$KILN_JOBS" --output-on-failure --no-tests=error \
          -R '^(ParallelStressTest|ParallelForTest|WorkQueueTest|EventTest|SpinTest|AsyncArrayTest|ArrayTest|RendezvousTest|Pjrt)'
      kiln_log_disk "after build/tsan"
      kiln_prune_build build/tsan
      ;;
    dev)
      # The shipped configuration: Release, OpenBLAS from scipy-openblas32 as in the wheel. Its
      # compile lines equal the wheel build's, so ccache serves the objects setup.sh compiled.
      kiln_cmake_build build/dev -DKILN_BUILD_TESTS=ON -DKILN_SANITIZE=OFF -DKILN_EXCLUDE_REGEX= \
        -DCMAKE_BUILD_TYPE=Release -DKILN_BLAS=scipy-openblas32 -DPython3_EXECUTABLE="$KILN_PY"
      kiln_log "ctest: build/dev"
      ctest --test-dir build/dev -j "$KILN_JOBS" --output-on-failure --no-tests=error
      kiln_log_disk "after build/dev"
      ;;
    *) kiln_die "unknown variant '$v' (expected asan, tsan or dev)" ;;
  esac
done
