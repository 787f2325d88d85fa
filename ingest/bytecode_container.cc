#include "ingest/bytecode_container.h"

#include <array>
#include <optional>

namespace kiln::ingest {
namespace {

constexpr std::array<uint8_t, 4> kMagic = {0x4D, 0x4C, 0xEF, 0x52};  // "ML\xEFR"

const char* SectionName(uint8_t id) {
  switch (id) {
    case kStringSection:
      return "String";
    case kDialectSection:
      return "Dialect";
    case kAttrTypeSection:
      return "AttrType";
    case kAttrTypeOffsetSection:
      return "AttrTypeOffset";
    case kIrSection:
      return "IR";
    case kResourceSection:
      return "Resource";
    case kResourceOffsetSection:
      return "ResourceOffset";
    case kDialectVersionsSection:
      return "DialectVersions";
    case kPropertiesSection:
      return "Properties";
  }
  return "unknown";
}

// String section: `varint count`, the sizes (each including the NUL) in reverse order, then the
// string bytes back to back, so string i ends where string i+1 begins.
Status ParseStrings(const Section& section, Container& out) {
  ByteReader reader(section);
  // Each string costs at least one size byte and one NUL byte.
  KILN_ASSIGN_OR_RETURN(uint64_t count, reader.ReadCount("string", 2));
  out.strings.resize(static_cast<size_t>(count));
  size_t data_end = section.data.size();
  for (size_t i = out.strings.size(); i-- > 0;) {
    KILN_ASSIGN_OR_RETURN(uint64_t size, reader.ReadVarInt());
    if (size == 0) return reader.Error("string #" + std::to_string(i) + " has size 0 (no NUL)");
    if (size > data_end) {
      return reader.Error("string #" + std::to_string(i) + " of " + std::to_string(size) +
                          " bytes exceeds the section");
    }
    data_end -= static_cast<size_t>(size);
    out.strings[i] = std::string_view(reinterpret_cast<const char*>(section.data.data()) + data_end,
                                      static_cast<size_t>(size - 1));
  }
  if (section.data.size() - reader.remaining() != data_end) {
    return reader.Error("string section has stray bytes between the sizes and the string data");
  }
  return Status::Ok();
}

// Reads `varint dialectIndex, varint count` and checks both.
Status ReadDialectGroup(ByteReader& reader, const Container& c, uint32_t& dialect, uint64_t& count,
                        uint64_t max_count) {
  KILN_ASSIGN_OR_RETURN(uint64_t index, reader.ReadVarInt());
  if (index >= c.dialects.size()) {
    return reader.Error("dialect index " + std::to_string(index) + " out of range (" +
                        std::to_string(c.dialects.size()) + " dialects)");
  }
  dialect = static_cast<uint32_t>(index);
  KILN_ASSIGN_OR_RETURN(count, reader.ReadCount("group entry"));
  if (count > max_count) {
    return reader.Error("dialect group of " + std::to_string(count) +
                        " entries overruns its table");
  }
  return Status::Ok();
}

Status ParseDialects(const Section& section, Container& c) {
  ByteReader reader(section);
  KILN_ASSIGN_OR_RETURN(uint64_t num_dialects, reader.ReadCount("dialect"));
  c.dialects.reserve(static_cast<size_t>(num_dialects));
  for (uint64_t i = 0; i < num_dialects; ++i) {
    if (c.version < kBytecodeDialectVersioning) {
      KILN_ASSIGN_OR_RETURN(std::string_view name, c.ReadStringRef(reader));
      c.dialects.push_back(name);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(FlaggedVarInt name_and_version, reader.ReadVarIntWithFlag());
    if (name_and_version.value >= c.strings.size()) {
      return reader.Error("dialect name string index " + std::to_string(name_and_version.value) +
                          " out of range");
    }
    c.dialects.push_back(c.strings[static_cast<size_t>(name_and_version.value)]);
    if (name_and_version.flag) {
      // A dialect version blob; VHLO writes none and Kiln does not need any, so it is skipped.
      KILN_ASSIGN_OR_RETURN(Section version_section, reader.ReadSection());
      if (version_section.id != kDialectVersionsSection) {
        return reader.Error("expected a dialect version section, found section " +
                            std::to_string(version_section.id));
      }
    }
  }

  if (c.version >= kBytecodeElideBlockArgLoc) {
    KILN_ASSIGN_OR_RETURN(uint64_t num_ops, reader.ReadCount("operation name"));
    c.op_names.reserve(static_cast<size_t>(num_ops));
  }
  while (!reader.empty()) {
    uint32_t dialect = 0;
    uint64_t count = 0;
    KILN_RETURN_IF_ERROR(ReadDialectGroup(reader, c, dialect, count, reader.remaining()));
    for (uint64_t i = 0; i < count; ++i) {
      OpNameEntry entry;
      entry.dialect = dialect;
      std::string_view name;
      if (c.version < kBytecodeNativeProperties) {
        KILN_ASSIGN_OR_RETURN(name, c.ReadStringRef(reader));
      } else {
        KILN_ASSIGN_OR_RETURN(FlaggedVarInt name_and_registered, reader.ReadVarIntWithFlag());
        if (name_and_registered.value >= c.strings.size()) {
          return reader.Error("op name string index " + std::to_string(name_and_registered.value) +
                              " out of range");
        }
        name = c.strings[static_cast<size_t>(name_and_registered.value)];
        entry.registered = name_and_registered.flag;
      }
      entry.full_name = std::string(c.dialects[dialect]);
      if (!name.empty()) entry.full_name += "." + std::string(name);
      c.op_names.push_back(std::move(entry));
    }
  }
  return Status::Ok();
}

// Properties section: `varint count`, then count x (varint size, bytes).
Status ParseProperties(const Section& section, Container& c) {
  if (section.data.empty()) return Status::Ok();
  ByteReader reader(section);
  KILN_ASSIGN_OR_RETURN(uint64_t count, reader.ReadCount("properties entry"));
  c.properties.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    Section entry;
    KILN_ASSIGN_OR_RETURN(uint64_t size, reader.ReadVarInt());
    entry.offset = reader.offset();
    KILN_ASSIGN_OR_RETURN(entry.data, reader.ReadBytes(size));
    c.properties.push_back(entry);
  }
  if (!reader.empty()) return reader.Error("properties section has trailing bytes");
  return Status::Ok();
}

// AttrTypeOffset section: `varint numAttrs, varint numTypes`, then dialect groups of
// `varint (size << 1 | hasCustomEncoding)` covering all attributes, then all types. Entries lie
// back to back in the AttrType section.
Status ParseAttrTypeTables(const Section& data_section, const Section& offset_section,
                           Container& c) {
  ByteReader reader(offset_section);
  KILN_ASSIGN_OR_RETURN(uint64_t num_attrs, reader.ReadCount("attribute"));
  KILN_ASSIGN_OR_RETURN(uint64_t num_types, reader.ReadCount("type"));
  if (num_attrs + num_types > reader.remaining()) {
    return reader.Error("attribute and type counts exceed the offset table");
  }
  c.attrs.resize(static_cast<size_t>(num_attrs));
  c.types.resize(static_cast<size_t>(num_types));

  size_t data_offset = 0;
  for (std::vector<AttrTypeEntry>* table : {&c.attrs, &c.types}) {
    size_t next = 0;
    while (next < table->size()) {
      uint32_t dialect = 0;
      uint64_t count = 0;
      KILN_RETURN_IF_ERROR(ReadDialectGroup(reader, c, dialect, count, table->size() - next));
      for (uint64_t i = 0; i < count; ++i, ++next) {
        KILN_ASSIGN_OR_RETURN(FlaggedVarInt size_and_custom, reader.ReadVarIntWithFlag());
        const uint64_t size = size_and_custom.value;
        if (size > data_section.data.size() - data_offset) {
          return reader.Error(std::string(table == &c.attrs ? "attribute" : "type") + " #" +
                              std::to_string(next) + " of " + std::to_string(size) +
                              " bytes runs past the end of the AttrType section");
        }
        AttrTypeEntry& entry = (*table)[next];
        entry.dialect = dialect;
        entry.custom = size_and_custom.flag;
        entry.data = data_section.data.subspan(data_offset, static_cast<size_t>(size));
        entry.offset = data_section.offset + data_offset;
        data_offset += static_cast<size_t>(size);
      }
    }
  }
  if (!reader.empty()) return reader.Error("attribute/type offset table has trailing bytes");
  return Status::Ok();
}

}  // namespace

StatusOr<std::string_view> Container::ReadStringRef(ByteReader& reader) const {
  KILN_ASSIGN_OR_RETURN(uint64_t index, reader.ReadVarInt());
  if (index >= strings.size()) {
    return reader.Error("string index " + std::to_string(index) + " out of range (" +
                        std::to_string(strings.size()) + " strings)");
  }
  return strings[static_cast<size_t>(index)];
}

StatusOr<Container> ParseContainer(std::span<const uint8_t> bytes) {
  if (bytes.size() < kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), bytes.begin())) {
    return InvalidArgument(
        "not an MLIR bytecode file (expected magic bytes 4D 4C EF 52); Kiln accepts StableHLO "
        "portable artifacts only");
  }
  ByteReader reader(bytes);
  KILN_RETURN_IF_ERROR(reader.Skip(kMagic.size()));

  Container c;
  KILN_ASSIGN_OR_RETURN(c.version, reader.ReadVarInt());
  if (c.version > kBytecodeNewestVersion) {
    return InvalidArgument("MLIR bytecode version " + std::to_string(c.version) +
                           " is newer than the newest version Kiln reads (" +
                           std::to_string(kBytecodeNewestVersion) + ")");
  }
  KILN_ASSIGN_OR_RETURN(c.producer, reader.ReadNulTerminatedString());

  std::array<std::optional<Section>, 9> sections;
  while (!reader.empty()) {
    KILN_ASSIGN_OR_RETURN(Section section, reader.ReadSection(), "corrupt or truncated bytecode");
    if (sections[section.id]) {
      return reader.Error(std::string("duplicate top-level ") + SectionName(section.id) +
                          " section");
    }
    sections[section.id] = section;
  }
  for (uint8_t id :
       {kStringSection, kDialectSection, kAttrTypeSection, kAttrTypeOffsetSection, kIrSection}) {
    if (!sections[id]) {
      return DataLoss(std::string("bytecode has no ") + SectionName(id) + " section (truncated?)");
    }
  }
  if (c.version >= kBytecodeNativeProperties && !sections[kPropertiesSection]) {
    return DataLoss("bytecode version " + std::to_string(c.version) +
                    " requires a Properties section, but there is none (truncated?)");
  }

  KILN_RETURN_IF_ERROR(ParseStrings(*sections[kStringSection], c), "String section");
  KILN_RETURN_IF_ERROR(ParseDialects(*sections[kDialectSection], c), "Dialect section");
  if (sections[kPropertiesSection]) {
    KILN_RETURN_IF_ERROR(ParseProperties(*sections[kPropertiesSection], c), "Properties section");
  }
  KILN_RETURN_IF_ERROR(
      ParseAttrTypeTables(*sections[kAttrTypeSection], *sections[kAttrTypeOffsetSection], c),
      "AttrTypeOffset section");
  // Resource sections hold dialect blobs (dense_resource constants) that VHLO never writes; they
  // are ignored. A dense_resource attribute, should one appear, decodes as opaque.
  c.ir = *sections[kIrSection];
  return c;
}

}  // namespace kiln::ingest
