// PJRT_Executable_OptimizedProgram: the program an executable runs, for jaxlib's
// compiled.as_text() / hlo_modules() and for clients that read the compiled program back.
//
// jaxlib accepts two formats here: "hlo_with_config" (a serialized HloModuleProtoWithConfig) and
// "mlir", which it parses (text or bytecode, a StableHLO portable artifact included), legalizes to
// MHLO and converts to an HloModule whose text as_text() prints. Kiln answers "mlir" with the
// StableHLO program it compiled, as it was given: Kiln's own plan (fusions, buffers) is not a
// StableHLO program, and comments in MLIR text would not survive jaxlib's conversion to HLO anyway.
// jaxlib cannot convert Shardy's ops other than sdy.mesh (sdy.manual_computation from shard_map,
// sdy.sharding_constraint, ...): a program with them is exported to the GSPMD form JAX lowered to
// before Shardy (ir::ExportShardyForHlo: @Sharding / @SPMDFullToShardShape / @SPMDShardToFullShape
// custom calls, mhlo.sharding strings) and printed as MLIR text (ir::WriteMlirText). That text is
// the program Kiln runs, in global view: Kiln partitions in its own runtime (compiler/partition.h)
// and has no per-device program, so as_text() shows no collectives XLA's SPMD partitioner would
// insert (all-gather, ...). A program given as HLO is returned as "hlo_with_config" (the module
// and a config holding its entry layout, which PyTorch/XLA checks). A program given in another
// format has no MLIR form, and a Shardy program the export cannot write exactly (sub-axes,
// manual computations over part of a mesh, ...): for those UNIMPLEMENTED, which jaxlib treats as
// "no optimized program" (as_text() is None, layouts are the defaults) where any other error
// would be raised from as_text().
//
// Two calls, as the C API defines them: with program->code NULL the size and format are returned;
// then the caller passes a buffer of that size to be filled.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/hlo_reader.h"
#include "ir/mlir_text.h"
#include "ir/module.h"
#include "ir/shardy_export.h"
#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"
#include "support/thread.h"

namespace kiln::pjrt {
namespace {

constexpr char kMlirFormat[] = "mlir";
constexpr char kHloWithConfigFormat[] = "hlo_with_config";

// MLIR bytecode ("ML\xEFR") or MLIR text (UTF-8 without control characters other than white
// space); anything else (a serialized proto) is not MLIR.
bool IsMlir(std::string_view program) {
  if (program.size() >= 4 && program.substr(0, 4) == std::string_view("ML\xEFR", 4)) return true;
  if (program.empty()) return false;
  for (char c : program) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') return false;
    if (u == 0x7f) return false;
  }
  return true;
}

// The first Shardy op other than sdy.mesh in `module`, or "" when there is none. Walked with an
// explicit stack: regions nest up to ir::kMaxNestingDepth deep and this runs on the caller's
// thread.
std::string FirstUnconvertibleOp(const ir::Module& module) {
  std::vector<const ir::Op*> pending;
  for (const ir::Op& op : module.other_ops) pending.push_back(&op);
  for (const ir::Function& fn : module.functions) {
    for (const ir::Block& block : fn.body.blocks) {
      for (const ir::Op& op : block.ops) pending.push_back(&op);
    }
  }
  while (!pending.empty()) {
    const ir::Op* op = pending.back();
    pending.pop_back();
    if (op->name.starts_with("sdy.") && op->name != "sdy.mesh") return op->name;
    for (const ir::Region& region : op->regions) {
      for (const ir::Block& block : region.blocks) {
        for (const ir::Op& inner : block.ops) pending.push_back(&inner);
      }
    }
  }
  return "";
}

// The two calls of the C API: with program.code NULL the size, then the bytes.
Status CopyOut(const char* fn, const std::string& code, PJRT_Program& program) {
  if (program.code == nullptr) {
    program.code_size = code.size();
    return Status::Ok();
  }
  if (program.code_size < code.size()) {
    return InvalidArgument(Prefix(fn) + "program->code_size is " +
                           std::to_string(program.code_size) + " bytes; the program takes " +
                           std::to_string(code.size()) +
                           " (call first with program->code NULL to learn the size)");
  }
  std::memcpy(program.code, code.data(), code.size());
  program.code_size = code.size();
  return Status::Ok();
}

}  // namespace

PJRT_Error* Executable_OptimizedProgram(PJRT_Executable_OptimizedProgram_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_OptimizedProgram";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_OptimizedProgram_Args, program, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    KILN_CHECK_NOT_NULL(args->program, kFn);
    PJRT_Program* program = args->program;
    KILN_CHECK_ARGS(program, PJRT_Program, format_size,
                    "PJRT_Executable_OptimizedProgram (program)");
    // A program given as HLO comes back as the same module with its config
    // (ingest::HloModuleWithConfig): jaxlib and PyTorch/XLA read "hlo_with_config", not "hlo".
    std::string hlo_with_config;
    if (info->artifact_format == "hlo" || info->artifact_format == "hlo_with_config") {
      if (info->artifact_format == "hlo") {
        const ingest::CompileOptions& options = info->exe->options;
        KILN_ASSIGN_OR_RETURN(
            hlo_with_config,
            ingest::HloModuleWithConfig(
                {reinterpret_cast<const uint8_t*>(info->artifact.data()), info->artifact.size()},
                options.num_replicas, options.num_partitions));
      } else {
        hlo_with_config = info->artifact;
      }
      program->format = kHloWithConfigFormat;
      program->format_size = sizeof(kHloWithConfigFormat) - 1;
      return CopyOut(kFn, hlo_with_config, *program);
    }
    const std::string& code = info->artifact;
    if (!IsMlir(code)) {
      return Unimplemented(Prefix(kFn) +
                           "the executable was not compiled from MLIR; Kiln keeps no MLIR form "
                           "of it");
    }
    program->format = kMlirFormat;
    program->format_size = sizeof(kMlirFormat) - 1;
    const std::string op = FirstUnconvertibleOp(*info->exe->module);
    if (op.empty()) return CopyOut(kFn, code, *program);
    // Shardy ops: the program in the GSPMD form jaxlib converts, printed as MLIR text. On a large
    // stack: both walk regions as deep as the program nests them.
    std::string text;
    Status written = RunOnLargeStack([&]() -> Status {
      KILN_ASSIGN_OR_RETURN(ir::Module exported, ir::ExportShardyForHlo(*info->exe->module));
      KILN_ASSIGN_OR_RETURN(text, ir::WriteMlirText(exported));
      return Status::Ok();
    });
    if (!written.ok()) {
      return Unimplemented(Prefix(kFn) + "the program has " + op +
                           ", which jaxlib cannot convert to HLO, and Kiln cannot write it in "
                           "the GSPMD form jaxlib converts: " +
                           std::string(written.message()));
    }
    return CopyOut(kFn, text, *program);
  });
}

}  // namespace kiln::pjrt
