// Prints the ir::Module Kiln reads from a program file, MLIR bytecode (a StableHLO portable
// artifact) or MLIR text, in ir::PrintModule's form. Comparing the dumps of one program in both
// encodings checks that the two readers agree. Usage: ir_dump <program file>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ingest/text_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ir_dump <program.mlir or program.mlir.bc>\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  kiln::StatusOr<kiln::ir::Module> module = kiln::ingest::ReadMlirProgram(bytes);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", module.status().ToString().c_str());
    return 1;
  }
  const std::string text = kiln::ir::PrintModule(*module);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
