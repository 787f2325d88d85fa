// The per-op VHLO schema table (generated into vhlo_op_schemas.inc by tools/gen_vhlo_schemas.py):
// for every versioned VHLO op, its StableHLO name, the version range it exists in, and the names of
// its inherent attributes in the order the bytecode stores them. The bytecode carries attribute
// values without names, so this table is what gives them meaning.
#pragma once

#include <initializer_list>
#include <string_view>

namespace kiln::ingest {

struct VhloOpSchema {
  const char* vhlo_name;                     // "vhlo.dot_general_v2"
  const char* stablehlo_name;                // "stablehlo.dot_general", "func.call", ...
  const char* min_version;                   // "0.9.0"
  const char* max_version;                   // "1.5.0" or "current"
  std::initializer_list<const char*> attrs;  // property order (byte-wise ascending names)
  int regions;                               // -1: variadic
};

// nullptr if `vhlo_name` is not a VHLO op this build knows.
const VhloOpSchema* FindVhloOpSchema(std::string_view vhlo_name);

// The newest VHLO version the schema table was generated from, e.g. "1.20.0".
std::string_view VhloSchemaVersion();

}  // namespace kiln::ingest
