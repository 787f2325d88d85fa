// Prints which StableHLO ops Kiln can compile, from the op registry (what Kiln has) and the VHLO
// schema table (what a portable artifact can contain). Usage: op_coverage [--markdown]
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/families.h"
#include "lower/op_registry.h"

namespace {

struct VhloOp {
  const char* vhlo;
  const char* stablehlo;
  const char* min_version;
  const char* max_version;
};

#define KILN_VHLO_OP(vhlo, shlo, min, max, ...) {vhlo, shlo, min, max},
const VhloOp kVhloOps[] = {
#include "ingest/vhlo_op_schemas.inc"
};
#undef KILN_VHLO_OP

}  // namespace

int main(int argc, char** argv) {
  bool markdown = argc > 1 && std::strcmp(argv[1], "--markdown") == 0;
  const auto& registry = kiln::kernels::Registry();

  // Ops a current artifact can contain: those whose newest VHLO version is still current.
  std::set<std::string> current_ops;
  for (const VhloOp& op : kVhloOps) {
    if (std::strcmp(op.max_version, "current") == 0) current_ops.insert(op.stablehlo);
  }
  std::map<std::string, std::vector<std::string>> by_family;
  for (const auto& def : registry.ops())
    by_family[std::string(def.family)].push_back(std::string(def.name));

  std::vector<std::string> missing;
  size_t supported = 0;
  for (const std::string& name : current_ops) {
    if (name == "func.func" || name == "stablehlo.return") continue;  // structure, not kernels
    if (registry.Find(name) != nullptr) {
      ++supported;
    } else {
      missing.push_back(name);
    }
  }
  size_t total = supported + missing.size();
  if (markdown) {
    std::printf("# Kiln op coverage\n\n%zu of %zu StableHLO ops supported.\n\n", supported, total);
    std::printf("| family | ops |\n|---|---|\n");
    for (const auto& [family, ops] : by_family) {
      std::printf("| %s |", family.c_str());
      for (const auto& op : ops) std::printf(" `%s`", op.c_str());
      std::printf(" |\n");
    }
    std::printf("\n## Custom-call targets\n\n%zu targets of `stablehlo.custom_call`.\n\n",
                registry.custom_calls().size());
    std::map<std::string, std::vector<std::string>> targets;
    for (const auto& def : registry.custom_calls())
      targets[std::string(def.family)].push_back(std::string(def.target));
    if (!targets.empty()) std::printf("| family | targets |\n|---|---|\n");
    for (const auto& [family, names] : targets) {
      std::printf("| %s |", family.c_str());
      for (const auto& name : names) std::printf(" `%s`", name.c_str());
      std::printf(" |\n");
    }
    std::printf("\n## Not yet supported\n\n");
    for (const auto& op : missing) std::printf("- `%s`\n", op.c_str());
  } else {
    std::printf("supported %zu / %zu StableHLO ops\n", supported, total);
    for (const auto& [family, ops] : by_family) {
      std::printf("%-14s %zu:", family.c_str(), ops.size());
      for (const auto& op : ops) std::printf(" %s", op.c_str());
      std::printf("\n");
    }
    std::printf("missing %zu:", missing.size());
    for (const auto& op : missing) std::printf(" %s", op.c_str());
    std::printf("\n");
  }
  return 0;
}
