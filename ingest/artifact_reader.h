// Reads a StableHLO portable artifact (MLIR bytecode holding the VHLO dialect, plus the builtin
// subset and foreign dialects such as sdy) into Kiln's IR. Bytecode v6 is what StableHLO writes for
// VHLO >= 0.15; the older encodings (v0-v5, VHLO 0.9-0.14) are read too. Every read is
// bounds-checked: malformed input yields DATA_LOSS / INVALID_ARGUMENT / RESOURCE_EXHAUSTED errors,
// never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest {

// The VHLO versions this reader understands, advertised to frameworks as plugin attributes.
struct VhloVersion {
  int major, minor, patch;
};
inline constexpr VhloVersion kMinimumReadableVersion{0, 9, 0};
inline constexpr VhloVersion kCurrentReadableVersion{1, 17, 0};

// Bounds that keep hostile input from exhausting memory or stack.
struct ReadLimits {
  // Largest single dense literal once splats are expanded.
  uint64_t max_literal_bytes = uint64_t{1} << 30;
  // All attribute bytes materialized while reading one artifact (decoded values plus their copies
  // in the IR).
  uint64_t max_total_attr_bytes = uint64_t{2} << 30;
  // How deeply attributes and types may nest inside each other (real programs stay below 10; the
  // bound keeps decoding's recursion well inside any thread's stack).
  int max_nesting = 32;

  // What the one-argument ReadPortableArtifact uses: the defaults above plus room proportional to
  // the input, so programs that embed large constants (JAX inlines captured arrays) always fit.
  static ReadLimits ForInput(size_t input_bytes);
};

StatusOr<ir::Module> ReadPortableArtifact(std::span<const uint8_t> bytes);
StatusOr<ir::Module> ReadPortableArtifact(std::span<const uint8_t> bytes, const ReadLimits& limits);

}  // namespace kiln::ingest
