#include "ir/module.h"

namespace kiln::ir {
namespace {

const Attr* FindNamed(const std::vector<NamedAttr>& attrs, std::string_view name) {
  for (const NamedAttr& attr : attrs) {
    if (attr.name == name) return &attr.value;
  }
  return nullptr;
}

}  // namespace

const Attr* Op::attr(std::string_view attr_name) const {
  if (const Attr* inherent = FindNamed(attrs, attr_name)) return inherent;
  return FindNamed(discardable, attr_name);
}

const Function* Module::FindFunction(std::string_view fn_name) const {
  for (const Function& fn : functions) {
    if (fn.name == fn_name) return &fn;
  }
  return nullptr;
}

const Function* Module::MainFunction() const {
  if (const Function* main = FindFunction("main")) return main;
  const Function* only_public = nullptr;
  for (const Function& fn : functions) {
    if (fn.visibility != "public") continue;
    if (only_public != nullptr) return nullptr;  // ambiguous
    only_public = &fn;
  }
  return only_public;
}

const Attr* Module::attr(std::string_view attr_name) const { return FindNamed(attrs, attr_name); }

std::string_view Module::location(int32_t loc) const {
  if (loc < 0 || static_cast<size_t>(loc) >= locations.size()) return "unknown";
  return locations[static_cast<size_t>(loc)];
}

}  // namespace kiln::ir
