#include "kernels/elementwise_map.h"

#include <algorithm>
#include <cstddef>

#include "runtime/parallel.h"

namespace kiln::kernels::elementwise {
namespace {

// Sub-byte integers around an op's range function: inputs sign-extended into a stack block where
// the op reads them as numbers, results brought back to the stored form (elementwise_ops.h).
struct SubByteRangeState {
  RangeFn inner;
  std::shared_ptr<const void> inner_state;
  ir::DType out_dtype;  // normalized when it is a sub-byte type
  bool saturate;
  int sign_extend_bits;
  std::vector<bool> scalar;  // per range input
  std::vector<int> widths;   // per range input: element bytes
  int out_width;
};

void SubByteRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  const auto& s = *static_cast<const SubByteRangeState*>(state);
  auto* y = static_cast<std::byte*>(out);
  constexpr int64_t kBlock = 256;
  for (int64_t c = b; c < e; c += kBlock) {
    const int64_t len = std::min(kBlock, e - c);
    alignas(64) int8_t extended[lower::kMaxMapInputs][kBlock];
    const void* ptrs[lower::kMaxMapInputs] = {nullptr, nullptr, nullptr};
    for (size_t r = 0; r < s.scalar.size(); ++r) {
      const auto* x = static_cast<const uint8_t*>(in[r]) + (s.scalar[r] ? 0 : c * s.widths[r]);
      if (s.sign_extend_bits == 0) {
        ptrs[r] = x;
        continue;
      }
      const int64_t count = s.scalar[r] ? 1 : len;
      for (int64_t i = 0; i < count; ++i) extended[r][i] = SignExtend(x[i], s.sign_extend_bits);
      ptrs[r] = extended[r];
    }
    std::byte* dst = y + c * s.out_width;
    s.inner(ptrs, dst, 0, len, s.inner_state.get());
    if (SubByteBits(s.out_dtype) != 0) NormalizeSubByte(s.out_dtype, s.saturate, dst, len);
  }
}

}  // namespace

Kernel MakeMapKernel(MapSpec spec) {
  if (spec.input_order.empty()) {
    for (size_t i = 0; i < spec.in_elements.size(); ++i)
      spec.input_order.push_back(static_cast<int>(i));
  }
  if (SubByteBits(spec.out_type.dtype) != 0 || spec.sign_extend_bits != 0) {
    // Inputs sign-extended are sub-byte operands, one byte per element.
    SubByteRangeState sub{spec.range,
                          std::move(spec.state),
                          spec.out_type.dtype,
                          spec.saturate,
                          spec.sign_extend_bits,
                          {},
                          {},
                          ir::DTypeByteSize(spec.out_type.dtype)};
    const int64_t out_elements = spec.out_type.num_elements();
    for (int order : spec.input_order) {
      const auto o = static_cast<size_t>(order);
      sub.scalar.push_back(spec.in_elements[o] == 1 && out_elements != 1);
      sub.widths.push_back(spec.in_widths[o]);
    }
    spec.state = std::make_shared<const SubByteRangeState>(std::move(sub));
    spec.range = &SubByteRange;
    spec.code = {};
  }
  auto s = std::make_shared<const MapSpec>(std::move(spec));
  auto map = std::make_shared<lower::MapInfo>();
  map->range = s->range;
  map->code = s->code;
  map->state = s->state;
  map->input_order = s->input_order;
  map->elements = s->out_type.num_elements();
  map->out_width = ir::DTypeByteSize(s->out_type.dtype);
  map->in_widths = s->in_widths;
  map->chunk = s->chunk;
  for (size_t i = 0; i < s->input_order.size(); ++i) {
    const int64_t in_elements = s->in_elements[static_cast<size_t>(s->input_order[i])];
    map->scalar.push_back(in_elements == 1 && map->elements != 1);
  }
  Kernel kernel([s](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
    const size_t k = s->in_elements.size();
    for (size_t i = 0; i < k; ++i)
      KILN_RETURN_IF_ERROR(CheckInput(in, i, s->in_elements[i], s->in_widths[i]));
    const View& result = out[0];
    const void* ptrs[3] = {nullptr, nullptr, nullptr};
    for (size_t i = 0; i < k && i < 3; ++i)
      ptrs[i] = in[static_cast<size_t>(s->input_order[i])].data();
    void* y = result.data();
    runtime::ParallelFor(result.num_elements(), s->chunk,
                         [&](int64_t b, int64_t e) { s->range(ptrs, y, b, e, s->state.get()); });
    return Status::Ok();
  });
  if (s->input_order.size() <= lower::kMaxMapInputs) kernel.map = std::move(map);
  return kernel;
}

}  // namespace kiln::kernels::elementwise
