// A tiny MLIR-bytecode writer for tests: enough of the container format to assemble small portable
// artifacts by hand, including deliberately malformed ones (reference cycles, oversized splats,
// dangling value uses) that real producers never emit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::testing {

// A byte buffer with MLIR's primitive encodings.
struct Bytes {
  std::vector<uint8_t> data;

  Bytes& Byte(uint8_t b) {
    data.push_back(b);
    return *this;
  }
  // PrefixVarInt: n bytes hold 7n value bits, the low n bits of the first byte mark the length.
  Bytes& VarInt(uint64_t value) {
    for (int n = 1; n <= 8; ++n) {
      if (n == 8 || value < (uint64_t{1} << (7 * n))) {
        if (n == 8 && value >= (uint64_t{1} << 56)) break;
        const uint64_t word = (value << n) | (uint64_t{1} << (n - 1));
        for (int i = 0; i < n; ++i) data.push_back(static_cast<uint8_t>(word >> (8 * i)));
        return *this;
      }
    }
    data.push_back(0);  // 0x00 marker: a raw 8-byte value follows
    for (int i = 0; i < 8; ++i) data.push_back(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }
  Bytes& Signed(int64_t value) {
    return VarInt((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63));
  }
  Bytes& Flagged(uint64_t value, bool flag) { return VarInt((value << 1) | (flag ? 1 : 0)); }
  Bytes& Append(const Bytes& other) {
    data.insert(data.end(), other.data.begin(), other.data.end());
    return *this;
  }
  Bytes& Raw(const std::vector<uint8_t>& raw) {
    data.insert(data.end(), raw.begin(), raw.end());
    return *this;
  }
  // A section without alignment: id byte, varint length, payload.
  Bytes& Section(uint8_t id, const Bytes& payload) {
    Byte(id);
    VarInt(payload.data.size());
    return Append(payload);
  }
};

class BytecodeBuilder {
 public:
  uint64_t String(const std::string& s) {
    auto [it, inserted] = string_index_.try_emplace(s, strings_.size());
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  uint64_t Dialect(const std::string& name) {
    for (size_t i = 0; i < dialects_.size(); ++i) {
      if (strings_[dialects_[i]] == name) return i;
    }
    dialects_.push_back(String(name));
    return dialects_.size() - 1;
  }
  uint64_t OpName(const std::string& dialect, const std::string& name, bool registered = true) {
    op_names_.push_back({Dialect(dialect), String(name), registered});
    return op_names_.size() - 1;
  }
  // A custom-encoded attribute/type entry; `payload` starts with the kind code.
  uint64_t Attr(const std::string& dialect, const Bytes& payload) {
    attrs_.push_back({Dialect(dialect), true, payload.data});
    return attrs_.size() - 1;
  }
  uint64_t Type(const std::string& dialect, const Bytes& payload) {
    types_.push_back({Dialect(dialect), true, payload.data});
    return types_.size() - 1;
  }
  // Reserves an attribute slot to be filled later (for self-references).
  void SetAttr(uint64_t index, const Bytes& payload) { attrs_[index].data = payload.data; }
  uint64_t Properties(const Bytes& payload) {
    properties_.push_back(payload.data);
    return properties_.size() - 1;
  }

  std::vector<uint8_t> Build(const Bytes& ir, const std::string& producer = "StableHLO_v1.16.3",
                             uint64_t version = 6) const {
    Bytes out;
    out.Raw({0x4D, 0x4C, 0xEF, 0x52}).VarInt(version);
    for (char c : producer) out.Byte(static_cast<uint8_t>(c));
    out.Byte(0);

    Bytes strings;
    strings.VarInt(strings_.size());
    for (size_t i = strings_.size(); i-- > 0;) strings.VarInt(strings_[i].size() + 1);
    for (const std::string& s : strings_) {
      for (char c : s) strings.Byte(static_cast<uint8_t>(c));
      strings.Byte(0);
    }
    out.Section(0, strings);

    Bytes dialects;
    dialects.VarInt(dialects_.size());
    for (uint64_t name : dialects_) dialects.Flagged(name, false);
    dialects.VarInt(op_names_.size());
    for (const OpNameEntry& op : op_names_) {
      dialects.VarInt(op.dialect).VarInt(1).Flagged(op.name, op.registered);
    }
    out.Section(1, dialects);

    Bytes data, offsets;
    offsets.VarInt(attrs_.size()).VarInt(types_.size());
    for (const std::vector<Entry>* table : {&attrs_, &types_}) {
      for (const Entry& e : *table) {
        data.Raw(e.data);
        offsets.VarInt(e.dialect).VarInt(1).Flagged(e.data.size(), e.custom);
      }
    }
    out.Section(2, data);
    out.Section(3, offsets);

    Bytes properties;
    properties.VarInt(properties_.size());
    for (const std::vector<uint8_t>& p : properties_) properties.VarInt(p.size()).Raw(p);
    out.Section(8, properties);

    out.Section(4, ir);
    return out.data;
  }

 private:
  struct OpNameEntry {
    uint64_t dialect;
    uint64_t name;
    bool registered;
  };
  struct Entry {
    uint64_t dialect;
    bool custom;
    std::vector<uint8_t> data;
  };
  std::vector<std::string> strings_;
  std::map<std::string, uint64_t> string_index_;
  std::vector<uint64_t> dialects_;
  std::vector<OpNameEntry> op_names_;
  std::vector<Entry> attrs_;
  std::vector<Entry> types_;
  std::vector<std::vector<uint8_t>> properties_;
};

}  // namespace kiln::testing
