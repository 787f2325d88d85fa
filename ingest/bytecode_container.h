// The MLIR bytecode container: header, top-level sections and the tables they hold (strings,
// dialects and op names, attribute/type entries, properties). Parsing the container only slices the
// file into indexed views; attributes, types and the IR are decoded later, on demand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/byte_reader.h"
#include "support/status.h"

namespace kiln::ingest {

// Bytecode versions (MLIR's bytecode::BytecodeVersion) whose format changes the reader cares about.
inline constexpr uint64_t kBytecodeDialectVersioning = 1;  // dialect entries carry a version flag
inline constexpr uint64_t kBytecodeLazyLoading = 2;        // isolated regions become IR sections
inline constexpr uint64_t kBytecodeUseListOrdering = 3;    // use-list orders may follow values
inline constexpr uint64_t kBytecodeElideBlockArgLoc = 4;   // block-arg locations optional; op count
inline constexpr uint64_t kBytecodeNativeProperties = 5;   // properties section, registered flag
inline constexpr uint64_t kBytecodeNewestVersion = 6;      // what MLIR (and StableHLO) write today

// Top-level section ids (MLIR's bytecode::Section::ID).
enum SectionId : uint8_t {
  kStringSection = 0,
  kDialectSection = 1,
  kAttrTypeSection = 2,
  kAttrTypeOffsetSection = 3,
  kIrSection = 4,
  kResourceSection = 5,
  kResourceOffsetSection = 6,
  kDialectVersionsSection = 7,
  kPropertiesSection = 8,
};

struct OpNameEntry {
  uint32_t dialect = 0;   // index into Container::dialects
  std::string full_name;  // "vhlo.add_v1", "sdy.mesh", "builtin.module"
  // Whether the op was registered with the writer (bytecode >= 5). Registered ops store their
  // properties in the properties section; unregistered ones store them as an attribute.
  bool registered = false;
};

// One attribute or type entry: either dialect-defined bytes (custom encoding, starting with a
// varint kind code by convention) or MLIR's textual assembly form, NUL-terminated.
struct AttrTypeEntry {
  uint32_t dialect = 0;
  bool custom = false;
  std::span<const uint8_t> data;
  size_t offset = 0;  // absolute file offset of data[0]
};

struct Container {
  uint64_t version = 0;       // bytecode version
  std::string_view producer;  // e.g. "StableHLO_v1.16.3"
  std::vector<std::string_view> strings;
  std::vector<std::string_view> dialects;
  std::vector<OpNameEntry> op_names;
  std::vector<AttrTypeEntry> attrs;
  std::vector<AttrTypeEntry> types;
  std::vector<Section> properties;  // each entry's bytes (without its size prefix)
  Section ir;

  // A string-section reference read from `reader`, with a precise error on a bad index.
  StatusOr<std::string_view> ReadStringRef(ByteReader& reader) const;
  std::string_view dialect_name(uint32_t index) const {
    return index < dialects.size() ? dialects[index] : std::string_view("?");
  }
};

// Checks the magic number and bytecode version and slices the file into its tables. The returned
// container points into `bytes`, which must outlive it.
StatusOr<Container> ParseContainer(std::span<const uint8_t> bytes);

}  // namespace kiln::ingest
