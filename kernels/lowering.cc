#include "kernels/lowering.h"

namespace kiln::kernels {

Status CheckArrays(std::span<const runtime::View> arrays, std::span<const ir::Type> types) {
  if (arrays.size() < types.size()) return Internal("too few inputs");
  for (size_t i = 0; i < types.size(); ++i) {
    if ((arrays[i].ptr == nullptr && arrays[i].elements != 0) ||
        arrays[i].dtype != types[i].dtype || !runtime::SameDims(arrays[i].dims, types[i].dims)) {
      return Internal("input #" + std::to_string(i) + " does not match " + types[i].ToString());
    }
  }
  return Status::Ok();
}

const ir::Attr* FindAttr(const ir::Op& op, std::string_view name) {
  for (const ir::NamedAttr& a : op.attrs) {
    if (a.name == name) return a.value.is_none() ? nullptr : &a.value;
  }
  for (const ir::NamedAttr& a : op.attrs) {
    if (a.value.kind != ir::Attr::Kind::kDict) continue;
    if (const ir::Attr* inner = a.value.Find(name); inner != nullptr && !inner->is_none())
      return inner;
  }
  return nullptr;
}

StatusOr<std::vector<int64_t>> RequiredInts(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = FindAttr(op, name);
  if (a == nullptr) return InvalidArgument("missing attribute '" + std::string(name) + "'");
  std::optional<std::vector<int64_t>> v = a->AsInts();
  if (!v) return InvalidArgument("attribute '" + std::string(name) + "' is not an integer list");
  return std::move(*v);
}

StatusOr<std::vector<int64_t>> OptionalInts(const ir::Op& op, std::string_view name,
                                            std::vector<int64_t> fallback) {
  if (FindAttr(op, name) == nullptr) return fallback;
  return RequiredInts(op, name);
}

StatusOr<int64_t> RequiredInt(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = FindAttr(op, name);
  if (a == nullptr) return InvalidArgument("missing attribute '" + std::string(name) + "'");
  std::optional<int64_t> v = a->AsInt();
  if (!v) return InvalidArgument("attribute '" + std::string(name) + "' is not an integer");
  return *v;
}

StatusOr<int64_t> OptionalInt(const ir::Op& op, std::string_view name, int64_t fallback) {
  if (FindAttr(op, name) == nullptr) return fallback;
  return RequiredInt(op, name);
}

StatusOr<bool> OptionalBool(const ir::Op& op, std::string_view name, bool fallback) {
  const ir::Attr* a = FindAttr(op, name);
  if (a == nullptr) return fallback;
  if (a->kind == ir::Attr::Kind::kBool) return a->b;
  std::optional<int64_t> v = a->AsInt();
  if (!v) return InvalidArgument("attribute '" + std::string(name) + "' is not a boolean");
  return *v != 0;
}

namespace {

const ir::Op* FindInRegion(const ir::Region& region, ir::ValueId v, int depth) {
  if (depth > 64) return nullptr;
  for (const ir::Block& block : region.blocks) {
    for (const ir::Op& op : block.ops) {
      for (ir::ValueId r : op.results) {
        if (r == v) return &op;
      }
      for (const ir::Region& inner : op.regions) {
        if (const ir::Op* found = FindInRegion(inner, v, depth + 1)) return found;
      }
    }
  }
  return nullptr;
}

}  // namespace

const ir::Op* FindDefiningOp(const ir::Module& module, ir::ValueId v) {
  for (const ir::Function& fn : module.functions) {
    if (const ir::Op* found = FindInRegion(fn.body, v, 0)) return found;
  }
  return nullptr;
}

Status CheckStaticTensor(const ir::Type& type, std::string_view what) {
  if (!type.is_tensor()) return InvalidArgument(std::string(what) + " must be a tensor");
  if (!type.has_static_shape()) {
    return Unimplemented(std::string(what) + " has a dynamic dimension (" + type.ToString() +
                         "); only static shapes are supported");
  }
  if (type.num_elements() < 0) return InvalidArgument(std::string(what) + " is too large");
  return Status::Ok();
}

Status CheckAxes(std::span<const int64_t> axes, int64_t rank, std::string_view what) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) {
      return InvalidArgument(std::string(what) + " " + FormatInts(axes) +
                             " has an axis out of range for rank " + std::to_string(rank));
    }
    if (seen[static_cast<size_t>(a)]) {
      return InvalidArgument(std::string(what) + " " + FormatInts(axes) + " repeats axis " +
                             std::to_string(a));
    }
    seen[static_cast<size_t>(a)] = true;
  }
  return Status::Ok();
}

std::string FormatInts(std::span<const int64_t> values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

int64_t Product(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace kiln::kernels
