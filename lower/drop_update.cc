// The direct form of a one-window scatter (lower/drop_update.h).
#include "lower/drop_update.h"

#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/dtype_dispatch.h"

namespace kiln::lower {

int64_t ReadDropStart(const runtime::View& start) {
  return ir::VisitDType<ir::kIntegers>(
      start.dtype,
      [&](auto tag) -> int64_t {
        using T = ir::TagType<decltype(tag)>;
        T v;
        std::memcpy(&v, start.data(), sizeof(T));
        if constexpr (std::is_same_v<T, uint64_t>) {
          // Above INT64_MAX: out of range whichever way, so the top is as good as the value.
          return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                     ? std::numeric_limits<int64_t>::max()
                     : static_cast<int64_t>(v);
        } else {
          return static_cast<int64_t>(v);
        }
      },
      [] {
        return int64_t{-1};
      });  // not an index type (the scatter's lowering takes integers only)
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
