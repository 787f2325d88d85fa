// The direct form of a one-window scatter (lower/drop_update.h).
#include "lower/drop_update.h"

#include <cstddef>
#include <cstring>
#include <limits>

namespace kiln::lower {

int64_t ReadDropStart(const runtime::View& start) {
  const void* p = start.data();
  switch (start.dtype) {
    case ir::DType::kS8:
      return *static_cast<const int8_t*>(p);
    case ir::DType::kS16:
      return *static_cast<const int16_t*>(p);
    case ir::DType::kS32:
      return *static_cast<const int32_t*>(p);
    case ir::DType::kS64:
      return *static_cast<const int64_t*>(p);
    case ir::DType::kU8:
      return *static_cast<const uint8_t*>(p);
    case ir::DType::kU16:
      return *static_cast<const uint16_t*>(p);
    case ir::DType::kU32:
      return *static_cast<const uint32_t*>(p);
    case ir::DType::kU64: {
      const uint64_t v = *static_cast<const uint64_t*>(p);
      return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(v);
    }
    default:
      return -1;  // not an index type (the scatter's lowering takes integers only)
  }
}

void RunDropUpdate(const void* state, const runtime::View* in, const runtime::View* out) {
  const auto& c = *static_cast<const DropUpdateCode*>(state);
  if (out[0].data() != in[0].data() && c.operand_bytes > 0) {
    std::memcpy(out[0].data(), in[0].data(), c.operand_bytes);
  }
  const int64_t start = ReadDropStart(in[1]);
  if (start < 0 || start > c.start_max) return;  // the window does not fit: nothing written
  std::memcpy(static_cast<std::byte*>(out[0].data()) + static_cast<uint64_t>(start) * c.stride,
              in[2].data(), c.update_bytes);
}

}  // namespace kiln::lower
