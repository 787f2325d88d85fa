// libFuzzer harness: the artifact reader and the compiler behind it. Any input must give a module
// or an error, never a crash, hang, leak or out-of-bounds read (ASan + UBSan). When the bytes read
// as a module, it is also verified and compiled, so mutated but well-formed programs reach the
// compiler's own checks. Seed corpus: tests/fuzz/corpus/artifact_reader
// (tools/make_fuzz_corpus.py).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "compiler/compile.h"
#include "ingest/artifact_reader.h"
#include "support/thread.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  // As in PJRT_Client_Compile: reading and compiling recurse per nesting level, on a large stack.
  (void)kiln::RunOnLargeStack([&]() -> kiln::Status {
    kiln::StatusOr<kiln::ir::Module> module = kiln::ingest::ReadPortableArtifact(bytes);
    if (!module.ok()) return module.status();
    auto shared = std::make_shared<const kiln::ir::Module>(std::move(module).value());
    return kiln::compiler::CompileModule(shared, {}).status();
  });
  return 0;
}
