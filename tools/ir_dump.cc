// Prints the ir::Module Kiln reads from a program file, MLIR bytecode (a StableHLO portable
// artifact) or MLIR text, in ir::PrintModule's form. Comparing the dumps of one program in both
// encodings checks that the two readers agree. With --mlir the module is printed by
// ir::WriteMlirText instead (StableHLO MLIR text that MLIR's parser and Kiln's text reader read);
// with --mlir-for-jaxlib after ir::ExportShardyForHlo (what PJRT_Executable_OptimizedProgram
// returns for Shardy programs); with --hlo written as a serialized HloModuleProto by Kiln's HLO
// writer (ingest/hlo_writer.h), bytes on stdout. Usage:
// ir_dump [--mlir | --mlir-for-jaxlib | --hlo] <program file>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ingest/hlo_writer.h"
#include "ingest/text_reader.h"
#include "ir/mlir_text.h"
#include "ir/shardy_export.h"

int main(int argc, char** argv) {
  const bool export_shardy = argc == 3 && std::string(argv[1]) == "--mlir-for-jaxlib";
  const bool mlir = argc == 3 && (std::string(argv[1]) == "--mlir" || export_shardy);
  const bool hlo = argc == 3 && std::string(argv[1]) == "--hlo";
  if (argc != 2 && !mlir && !hlo) {
    std::fprintf(stderr,
                 "usage: ir_dump [--mlir | --mlir-for-jaxlib | --hlo] <program.mlir or "
                 "program.mlir.bc>\n");
    return 2;
  }
  const char* path = argv[argc - 1];
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  kiln::StatusOr<kiln::ir::Module> module = kiln::ingest::ReadMlirProgram(bytes);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", module.status().ToString().c_str());
    return 1;
  }
  if (export_shardy) {
    kiln::StatusOr<kiln::ir::Module> exported = kiln::ir::ExportShardyForHlo(*module);
    if (!exported.ok()) {
      std::fprintf(stderr, "%s\n", exported.status().ToString().c_str());
      return 1;
    }
    module = std::move(exported);
  }
  if (hlo) {
    kiln::StatusOr<std::string> proto = kiln::ingest::WriteHloModule(*module);
    if (!proto.ok()) {
      std::fprintf(stderr, "%s\n", proto.status().ToString().c_str());
      return 1;
    }
    std::fwrite(proto->data(), 1, proto->size(), stdout);
    return 0;
  }
  if (mlir) {
    kiln::StatusOr<std::string> text = kiln::ir::WriteMlirText(*module);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
      return 1;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }
  const std::string text = kiln::ir::PrintModule(*module);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
