#include "ingest/locations.h"

#include "ingest/byte_reader.h"
#include "ingest/encoding_names.h"

namespace kiln::ingest {
namespace {

constexpr int kMaxDepth = 64;

// Frames inside JAX itself say nothing about the user's program; prefer the first frame outside.
bool IsLibraryFrame(std::string_view file) {
  for (std::string_view marker : {"/jax/", "/jaxlib/", "/site-packages/jax", "<frozen "}) {
    if (file.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

bool LocationTable::StringAttrText(uint64_t attr_index, std::string_view& text) const {
  if (attr_index >= container_.attrs.size()) return false;
  const AttrTypeEntry& entry = container_.attrs[static_cast<size_t>(attr_index)];
  if (!entry.custom || container_.dialect_name(entry.dialect) != "builtin") return false;
  ByteReader reader(entry.data, entry.offset);
  StatusOr<uint64_t> code = reader.ReadVarInt();
  if (!code.ok() || (*code != kBuiltinStringAttr && *code != kBuiltinStringWithTypeAttr)) {
    return false;
  }
  StatusOr<std::string_view> value = container_.ReadStringRef(reader);
  if (!value.ok()) return false;
  text = *value;
  return true;
}

void LocationTable::Collect(uint64_t attr_index, Collected& out, int depth) const {
  if (depth > kMaxDepth || --out.budget < 0 || attr_index >= container_.attrs.size()) return;
  const AttrTypeEntry& entry = container_.attrs[static_cast<size_t>(attr_index)];
  if (!entry.custom || container_.dialect_name(entry.dialect) != "builtin") return;
  ByteReader r(entry.data, entry.offset);
  StatusOr<uint64_t> code = r.ReadVarInt();
  if (!code.ok()) return;

  switch (*code) {
    case kBuiltinCallSiteLoc: {  // callee, caller
      StatusOr<uint64_t> callee = r.ReadVarInt();
      if (!callee.ok()) return;
      StatusOr<uint64_t> caller = r.ReadVarInt();
      Collect(*callee, out, depth + 1);
      if (caller.ok()) Collect(*caller, out, depth + 1);
      return;
    }
    case kBuiltinFileLineColLoc:      // filename, line, column
    case kBuiltinFileLineColRange: {  // filename, [line, column, ...]
      StatusOr<uint64_t> file_attr = r.ReadVarInt();
      Frame frame;
      if (!file_attr.ok() || !StringAttrText(*file_attr, frame.file)) return;
      if (*code == kBuiltinFileLineColLoc) {
        StatusOr<uint64_t> line = r.ReadVarInt();
        StatusOr<uint64_t> column = line.ok() ? r.ReadVarInt() : line;
        if (line.ok()) frame.line = *line;
        if (column.ok()) frame.column = *column;
      } else {
        StatusOr<uint64_t> count = r.ReadVarInt();
        if (count.ok() && *count >= 1) {
          StatusOr<uint64_t> line = r.ReadVarInt();
          if (line.ok()) frame.line = *line;
          if (line.ok() && *count >= 2) {
            StatusOr<uint64_t> column = r.ReadVarInt();
            if (column.ok()) frame.column = *column;
          }
        }
      }
      out.frames.push_back(frame);
      return;
    }
    case kBuiltinFusedLoc:
    case kBuiltinFusedLocWithMetadata: {  // [locations], (metadata)
      StatusOr<uint64_t> count = r.ReadCount("fused location");
      if (!count.ok()) return;
      for (uint64_t i = 0; i < *count && out.budget > 0; ++i) {
        StatusOr<uint64_t> part = r.ReadVarInt();
        if (!part.ok()) return;
        Collect(*part, out, depth + 1);
      }
      return;
    }
    case kBuiltinNameLoc: {  // name, child
      StatusOr<uint64_t> name_attr = r.ReadVarInt();
      std::string_view name;
      if (!name_attr.ok() || !StringAttrText(*name_attr, name)) return;
      out.names.push_back(name);
      StatusOr<uint64_t> child = r.ReadVarInt();
      if (child.ok()) Collect(*child, out, depth + 1);
      return;
    }
    default:  // UnknownLoc, or not a location at all
      return;
  }
}

int32_t LocationTable::Intern(uint64_t attr_index) {
  if (auto it = by_attr_.find(attr_index); it != by_attr_.end()) return it->second;

  Collected collected;
  Collect(attr_index, collected, 0);
  std::string text;
  if (!collected.frames.empty()) {
    const Frame* chosen = &collected.frames.front();
    for (const Frame& frame : collected.frames) {
      if (!IsLibraryFrame(frame.file)) {
        chosen = &frame;
        break;
      }
    }
    text = std::string(chosen->file);
    if (chosen->line != 0) text += ":" + std::to_string(chosen->line);
    if (chosen->line != 0 && chosen->column != 0) text += ":" + std::to_string(chosen->column);
  }
  if (!collected.names.empty()) {
    text += text.empty() ? std::string(collected.names.front())
                         : " (" + std::string(collected.names.front()) + ")";
  }

  int32_t index = -1;
  if (!text.empty()) {
    auto [it, inserted] = by_text_.try_emplace(text, static_cast<int32_t>(locations_.size()));
    if (inserted) locations_.push_back(text);
    index = it->second;
  }
  by_attr_.emplace(attr_index, index);
  return index;
}

}  // namespace kiln::ingest
