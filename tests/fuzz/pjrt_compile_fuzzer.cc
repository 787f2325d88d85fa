// libFuzzer harness: PJRT_Client_Compile through the C API, exactly as jaxlib calls it, with both
// the program and the serialized CompileOptionsProto taken from the input. Every input must give an
// executable or a PJRT_Error, never a crash, hang or leak. Executables are destroyed, not run: a
// valid mutated program may legitimately loop forever.
//
// Input layout: a little-endian u16 L, then L bytes of compile options (L is reduced modulo what
// is left), then the program bytes. Seed corpus: tests/fuzz/corpus/pjrt_compile, made from
// tests/fixtures by tools/make_fuzz_corpus.py.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "abi/pjrt_c_api.h"

extern "C" const PJRT_Api* GetPjrtApi();

namespace {

void Consume(PJRT_Error* error) {
  if (error == nullptr) return;
  const PJRT_Api* api = GetPjrtApi();
  PJRT_Error_GetCode_Args code{};
  code.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE;
  code.error = error;
  api->PJRT_Error_GetCode(&code);
  PJRT_Error_Message_Args msg{};
  msg.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  msg.error = error;
  api->PJRT_Error_Message(&msg);
  if (msg.message == nullptr && msg.message_size != 0) std::abort();  // an error must say why
  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = error;
  api->PJRT_Error_Destroy(&destroy);
}

PJRT_Client* Client() {
  static PJRT_Client* client = [] {
    PJRT_Client_Create_Args args{};
    args.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
    PJRT_Error* error = GetPjrtApi()->PJRT_Client_Create(&args);
    if (error != nullptr) std::abort();
    return args.client;
  }();
  return client;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t options_size = static_cast<size_t>(data[0]) | static_cast<size_t>(data[1]) << 8;
  data += 2;
  size -= 2;
  options_size = size == 0 ? 0 : options_size % (size + 1);
  const uint8_t* options = data;
  const uint8_t* code = data + options_size;
  const size_t code_size = size - options_size;

  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  program.code = const_cast<char*>(reinterpret_cast<const char*>(code));
  program.code_size = code_size;
  program.format = "mlir";
  program.format_size = 4;
  PJRT_Client_Compile_Args args{};
  args.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  args.client = Client();
  args.program = &program;
  args.compile_options = reinterpret_cast<const char*>(options);
  args.compile_options_size = options_size;
  PJRT_Error* error = GetPjrtApi()->PJRT_Client_Compile(&args);
  if (error != nullptr) {
    Consume(error);
    return 0;
  }
  PJRT_LoadedExecutable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = args.executable;
  Consume(GetPjrtApi()->PJRT_LoadedExecutable_Destroy(&destroy));
  return 0;
}
