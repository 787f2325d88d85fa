// Reads a StableHLO portable artifact (MLIR bytecode v6 holding the VHLO dialect, plus the builtin
// subset and foreign dialects such as sdy) into Kiln's IR. Every read is bounds-checked: malformed
// input yields DATA_LOSS / INVALID_ARGUMENT errors, never a crash.
#pragma once

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

StatusOr<ir::Module> ReadPortableArtifact(std::span<const uint8_t> bytes);

}  // namespace kiln::ingest
