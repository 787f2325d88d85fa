// Reads StableHLO programs written as MLIR text (what `jax.jit(f).lower(x).as_text()` prints,
// hand-written programs, pypjrt's examples) into the same ir::Module that ReadPortableArtifact
// produces for the same program: StableHLO op names, attributes named and shaped as the VHLO
// schema gives them (defaults filled in, dimension-number records flattened), locations as short
// "file:line:col (name)" strings. Both MLIR forms are read: the pretty forms StableHLO's and
// func's printers use, and the generic form ("stablehlo.add"(%a, %b) : (...) -> ...).
//
// Malformed input is an INVALID_ARGUMENT error naming "<text>:line:col"; nesting and sizes are
// bounded like the bytecode reader's (ReadLimits, ir::kMaxNestingDepth): never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ingest/artifact_reader.h"
#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest {

// True if `bytes` start with MLIR bytecode's magic ("ML\xEFR"); such programs go to
// ReadPortableArtifact, everything else is read as text.
bool IsMlirBytecode(std::span<const uint8_t> bytes);

StatusOr<ir::Module> ReadStableHloText(std::string_view text);
StatusOr<ir::Module> ReadStableHloText(std::string_view text, const ReadLimits& limits);

// Bytecode or text, by the magic (what PJRT_Program format "mlir" may hold).
StatusOr<ir::Module> ReadMlirProgram(std::span<const uint8_t> bytes);

}  // namespace kiln::ingest
