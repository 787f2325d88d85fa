// XLA's dump files for compiled programs (pjrt/dump.h).
#include "pjrt/dump.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "ingest/hlo_reader.h"
#include "ingest/hlo_writer.h"
#include "ingest/text_reader.h"
#include "ir/mlir_text.h"
#include "ir/shardy_export.h"
#include "support/log.h"
#include "support/thread.h"

namespace kiln::pjrt {
namespace {

std::atomic<int> next_module_id{0};

// The module name as a file name (XLA's dumps replace the same characters).
std::string FileNameOf(std::string name) {
  if (name.empty()) name = "module";
  for (char& c : name) {
    if (c == '/' || c == '\\' || c == '[' || c == ']' || c == ' ' || c == ':') c = '_';
  }
  return name;
}

void Warn(const std::string& message) { KILN_LOG(kWarning, "xla_dump_to: " + message); }

void WriteFile(const std::filesystem::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) Warn("cannot write " + path.string());
}

// The program as MLIR text; Shardy programs in the GSPMD form jaxlib reads (as
// PJRT_Executable_OptimizedProgram gives them); Kiln's own IR print if neither can be written.
std::string TextOf(const ir::Module& module) {
  StatusOr<std::string> text = ir::WriteMlirText(module);
  if (text.ok()) return *std::move(text);
  StatusOr<ir::Module> exported = ir::ExportShardyForHlo(module);
  if (exported.ok()) {
    StatusOr<std::string> gspmd = ir::WriteMlirText(*exported);
    if (gspmd.ok()) return *std::move(gspmd);
  }
  return "// Kiln's MLIR writer cannot print this program (" +
         std::string(text.status().message()) + "); Kiln's IR:\n" + ir::PrintModule(module);
}

void DumpModule(const ir::Module& module, const std::filesystem::path& stem, bool as_text,
                bool as_proto) {
  if (as_text) WriteFile(stem.string() + ".txt", TextOf(module));
  if (!as_proto) return;
  StatusOr<std::string> proto = ingest::WriteHloModule(module);
  if (!proto.ok()) {
    Warn("no " + stem.filename().string() + ".hlo.pb: " + std::string(proto.status().message()));
    return;
  }
  WriteFile(stem.string() + ".hlo.pb", ingest::HloProtoOf(*proto));
}

}  // namespace

void DumpCompiled(const compiler::Executable& exe, std::span<const uint8_t> code,
                  std::string_view format) {
  const ingest::CompileOptions& options = exe.options;
  const std::optional<std::string> dir = options.StringOverride("xla_dump_to");
  if (!dir || dir->empty()) return;
  const bool proto_asked = options.Override("xla_dump_hlo_as_proto") != nullptr;
  const bool as_proto = options.BoolOverride("xla_dump_hlo_as_proto", false);
  // Text unless turned off, or unless only another format was asked for (as XLA decides).
  const bool as_text = options.BoolOverride("xla_dump_hlo_as_text", !proto_asked);
  if (!as_text && !as_proto) return;
  std::error_code error;
  std::filesystem::create_directories(*dir, error);
  if (error) {
    Warn("cannot create " + *dir + ": " + error.message());
    return;
  }
  char id[16];
  std::snprintf(id, sizeof(id), "%04d", next_module_id.fetch_add(1));
  const std::string name = FileNameOf(exe.name);
  const std::filesystem::path base =
      std::filesystem::path(*dir) / ("module_" + std::string(id) + "." + name);
  // Both walk regions as deep as the program nests them: on a large stack.
  const Status dumped = RunOnLargeStack([&]() -> Status {
    const bool hlo = format == "hlo" || format == "hlo_with_config";
    StatusOr<ir::Module> read =
        hlo ? ingest::ReadHloModule(code, format != "hlo") : ingest::ReadMlirProgram(code);
    if (read.ok()) {
      DumpModule(*read, base.string() + ".before_optimizations", as_text, as_proto);
    }
    if (exe.module != nullptr) {
      DumpModule(*exe.module, base.string() + ".after_optimizations", as_text, as_proto);
    }
    return Status::Ok();
  });
  if (!dumped.ok()) Warn(std::string(dumped.message()));
}

}  // namespace kiln::pjrt
