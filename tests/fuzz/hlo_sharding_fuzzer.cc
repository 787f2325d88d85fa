// libFuzzer harness: the parser of GSPMD's sharding text (lower/hlo_sharding.h), as it reads
// `mhlo.sharding` attributes, and its conversion to a TensorSharding for a few value shapes and
// device counts. Any input must give a sharding or an error, never a crash, hang or out-of-bounds
// read (ASan + UBSan). Seed corpus: tests/fuzz/corpus/hlo_sharding (tools/make_fuzz_corpus.py).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lower/hlo_sharding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::StatusOr<kiln::lower::HloSharding> sharding = kiln::lower::ParseHloSharding(text);
  if (!sharding.ok()) return 0;
  for (const auto& dims :
       {std::vector<int64_t>{8}, std::vector<int64_t>{8, 4}, std::vector<int64_t>{2, 6, 4}}) {
    const kiln::ir::Type type = kiln::ir::Type::Tensor(kiln::ir::DType::kF32, dims);
    for (int64_t devices : {1, 2, 4, 8}) {
      kiln::StatusOr<kiln::lower::TensorSharding> s =
          kiln::lower::ToTensorSharding(*sharding, type, devices, "fuzz");
      if (!s.ok() || s->mesh.num_devices() != devices) continue;
      for (int64_t d = 0; d < devices; ++d) (void)kiln::lower::ShardOf(*s, dims, d);
    }
  }
  return 0;
}
