// Compile: portable artifact + CompileOptionsProto -> Executable. Reads, verifies, checks every op
// against the registry (reporting all unsupported ops at once), and lowers to kernels.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/partition.h"
#include "engine/executable.h"
#include "ingest/compile_options.h"
#include "ir/module.h"
#include "lower/program.h"

namespace kiln::compiler {

// A compiled module: what the engine runs (engine/executable.h), and what the C API reports about
// it or serializes.
struct Executable : engine::Executable {
  std::shared_ptr<const ir::Module> module;
  // minor_to_major of each argument and result at the boundary (compiler/entry_layouts.h):
  // arg_types / result_types are the physical (row-major) types of arrays in these orders.
  std::vector<std::vector<int64_t>> arg_layouts, result_layouts;
  ingest::CompileOptions options;
};

// What the C API asks to compile: a program's bytes in `format` ("mlir": a StableHLO portable
// artifact; "hlo" / "hlo_with_config": a serialized HloModuleProto / HloModuleProtoWithConfig), and
// its CompileOptionsProto, which the caller parsed once (ingest::ParseCompileOptions) for its own
// use too.
struct CompileRequest {
  std::span<const uint8_t> code;
  std::string_view format = "mlir";
  ingest::CompileOptions options;
};

StatusOr<std::shared_ptr<const Executable>> Compile(CompileRequest request);

// Compiles an already-read module (used by tests and by Compile).
StatusOr<std::shared_ptr<const Executable>> CompileModule(std::shared_ptr<const ir::Module> module,
                                                          ingest::CompileOptions options,
                                                          std::string fingerprint = "");

}  // namespace kiln::compiler
