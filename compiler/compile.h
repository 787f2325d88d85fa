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
#include "ingest/compile_options.h"
#include "ir/module.h"
#include "lower/program.h"

namespace kiln::compiler {

struct Executable {
  std::string name;  // the module name, e.g. "jit_add"
  std::shared_ptr<const ir::Module> module;
  std::shared_ptr<const lower::Program> main;
  // Types at the PJRT boundary. A `!stablehlo.token` parameter or result of @main (ordered
  // effects) is a pred[0] buffer there, as JAX passes and expects its runtime tokens; inside, the
  // program still sees a token (token_args / token_results mark them).
  std::vector<ir::Type> arg_types;
  std::vector<ir::Type> result_types;
  std::vector<bool> token_args;
  std::vector<bool> token_results;
  // Parameters the program lets the caller donate (`tf.aliasing_output` or `jax.buffer_donor` on
  // @main's argument): Execute consumes such a buffer (it is deleted) unless the caller's
  // non_donatable_input_indices exempt it.
  std::vector<bool> donated_args;
  // Per result: the donated parameter whose buffer it may be computed into (compiler/donation.h),
  // or -1. Execute uses the buffer only if this call donates it and nothing else holds it.
  std::vector<int32_t> result_donor;
  // Multi-device programs (num_partitions > 1): how @main's values split over the devices. Then
  // arg_types / result_types are the per-device shard types, and `main` runs over global values.
  std::optional<SpmdLayout> spmd;
  ingest::CompileOptions options;
  std::string fingerprint;  // stable hash of the artifact and the options Kiln honours
  // Small enough to run on the caller's thread when its device is idle: every value
  // together under kInlineBytes. A thread handoff costs more than such a program.
  bool run_inline = false;
  static constexpr uint64_t kInlineBytes = 256 << 10;
};

StatusOr<std::shared_ptr<const Executable>> Compile(std::span<const uint8_t> code,
                                                    std::string_view format,
                                                    std::span<const uint8_t> compile_options);

// Compiles an already-read module (used by tests and by Compile).
StatusOr<std::shared_ptr<const Executable>> CompileModule(std::shared_ptr<const ir::Module> module,
                                                          ingest::CompileOptions options,
                                                          std::string fingerprint = "");

}  // namespace kiln::compiler
