// libFuzzer harness: the HLO reader (HloModuleProto -> ir::Module) and the compiler behind it. Any
// input must give a module or an error, never a crash, hang, leak or out-of-bounds read (ASan +
// UBSan). Inputs that read as a module are also compiled, so mutated but well-formed programs
// reach the compiler's own checks. Seed corpus: tests/fuzz/corpus/hlo_reader
// (tools/make_fuzz_corpus.py).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "compiler/compile.h"
#include "ingest/hlo_reader.h"
#include "support/thread.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  (void)kiln::RunOnLargeStack([&]() -> kiln::Status {
    kiln::StatusOr<kiln::ir::Module> module = kiln::ingest::ReadHloModule(bytes);
    if (!module.ok()) return module.status();
    auto shared = std::make_shared<const kiln::ir::Module>(std::move(module).value());
    return kiln::compiler::CompileModule(shared, {}).status();
  });
  return 0;
}
