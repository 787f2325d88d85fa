// libFuzzer harness: the MLIR text reader and the compiler behind it. Any input must give a module
// or an error, never a crash, hang, leak or out-of-bounds read (ASan + UBSan). When the text reads
// as a module, it is also compiled, so mutated but well-formed programs reach the compiler's own
// checks. Seed corpus: tests/fuzz/corpus/text_reader (tools/make_fuzz_corpus.py: the fixtures'
// MLIR text).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "compiler/compile.h"
#include "ingest/text_reader.h"
#include "support/thread.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // As in PJRT_Client_Compile: reading and compiling recurse per nesting level, on a large stack.
  (void)kiln::RunOnLargeStack([&]() -> kiln::Status {
    kiln::StatusOr<kiln::ir::Module> module = kiln::ingest::ReadStableHloText(text);
    if (!module.ok()) return module.status();
    auto shared = std::make_shared<const kiln::ir::Module>(std::move(module).value());
    return kiln::compiler::CompileModule(shared, {}).status();
  });
  return 0;
}
