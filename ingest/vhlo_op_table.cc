#include "ingest/vhlo_op_table.h"

#include <string>
#include <unordered_map>

namespace kiln::ingest {
namespace {

// Plain braces (no typed temporaries) so the initializer_list arrays live as long as the table.
const VhloOpSchema kSchemas[] = {
#define KILN_VHLO_OP(vhlo, shlo, min, max, ...) {vhlo, shlo, min, max, __VA_ARGS__},
#include "ingest/vhlo_op_schemas.inc"
#undef KILN_VHLO_OP
};

constexpr std::string_view kSchemaVersion =
#define KILN_VHLO_VERSION_CURRENT(version) version
#include "ingest/vhlo_op_schemas.inc"
#undef KILN_VHLO_VERSION_CURRENT
    ;

const std::unordered_map<std::string_view, const VhloOpSchema*>& SchemaIndex() {
  static const auto* index = [] {
    auto* map = new std::unordered_map<std::string_view, const VhloOpSchema*>();
    for (const VhloOpSchema& schema : kSchemas) map->emplace(schema.vhlo_name, &schema);
    return map;
  }();
  return *index;
}

}  // namespace

const VhloOpSchema* FindVhloOpSchema(std::string_view vhlo_name) {
  auto it = SchemaIndex().find(vhlo_name);
  return it == SchemaIndex().end() ? nullptr : it->second;
}

std::string_view VhloSchemaVersion() { return kSchemaVersion; }

}  // namespace kiln::ingest
