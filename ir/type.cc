#include "ir/type.h"

#include <limits>

namespace kiln::ir {

bool Type::has_static_shape() const {
  if (kind != Kind::kTensor) return false;
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Type::num_elements() const {
  if (kind == Kind::kToken) return 0;  // a token holds no data
  if (!has_static_shape()) return -1;
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d) return -1;
    count *= d;
  }
  return count;
}

std::string Type::ToString() const {
  switch (kind) {
    case Kind::kTensor: {
      std::string out = "tensor<";
      for (int64_t d : dims) out += (d == kDynamicDim || d < 0 ? "?" : std::to_string(d)) + "x";
      out += DTypeName(dtype);
      return out + ">";
    }
    case Kind::kToken:
      return "!stablehlo.token";
    case Kind::kTuple: {
      std::string out = "tuple<";
      for (size_t i = 0; i < elements.size(); ++i) out += (i ? ", " : "") + elements[i].ToString();
      return out + ">";
    }
    case Kind::kOpaque:
      return opaque;
  }
  return "<invalid type>";
}

}  // namespace kiln::ir
