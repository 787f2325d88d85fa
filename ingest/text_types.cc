// Types (tensor<4x?xf32>, !stablehlo.token, tuple<...>, element types) and location attributes
// (loc("file":1:2), NameLoc, callsite, fused, #loc aliases defined after the module).
#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {
namespace {

constexpr int kMaxLocationDepth = 64;
constexpr size_t kMaxLocationParts = 256;

const std::unordered_map<std::string_view, ir::DType>& ElementTypes() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string_view, ir::DType>();
    for (int i = 0; i <= ir::kMaxDType; ++i) {
      const auto dtype = static_cast<ir::DType>(i);
      const std::string_view name = ir::DTypeName(dtype);
      if (!name.empty() && dtype != ir::DType::kInvalid && dtype != ir::DType::kToken) {
        t->emplace(name, dtype);
      }
    }
    return t;
  }();
  return *table;
}

// Frames inside JAX itself say nothing about the user's program (as LocationTable decides).
bool IsLibraryFrame(std::string_view file) {
  for (std::string_view marker : {"/jax/", "/jaxlib/", "/site-packages/jax", "<frozen "}) {
    if (file.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

void Append(LocInfo& into, const LocInfo& from) {
  for (const LocFrame& f : from.frames) {
    if (into.frames.size() < kMaxLocationParts) into.frames.push_back(f);
  }
  for (const std::string& n : from.names) {
    if (into.names.size() < kMaxLocationParts) into.names.push_back(n);
  }
}

}  // namespace

Status Parser::ScanAliases() {
  size_t line_start = 0;
  while (line_start < text_.size()) {
    size_t end = text_.find('\n', line_start);
    if (end == std::string_view::npos) end = text_.size();
    const char c = text_[line_start];
    if (c == '#' || c == '!') {
      size_t i = line_start + 1;
      while (i < end && (std::isalnum(static_cast<unsigned char>(text_[i])) || text_[i] == '_' ||
                         text_[i] == '$' || text_[i] == '.')) {
        ++i;
      }
      const std::string name(text_.substr(line_start + 1, i - line_start - 1));
      while (i < end && text_[i] == ' ') ++i;
      if (!name.empty() && i < end && text_[i] == '=') {
        (c == '#' ? attr_aliases_ : type_aliases_).emplace(name, i + 1);
      }
    }
    line_start = end + 1;
  }
  return Status::Ok();
}

bool Parser::PeekTypeStart() {
  const char c = Peek();
  return c == '!' || c == '(' || std::isalpha(static_cast<unsigned char>(c));
}

StatusOr<ir::DType> Parser::ParseElementType() {
  SkipSpace();
  const size_t start = pos_;
  while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  std::string name(text_.substr(start, pos_ - start));
  if (name == "complex") {
    KILN_RETURN_IF_ERROR(Expect('<', "after 'complex'"));
    SkipSpace();
    const size_t inner = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    name += "<" + std::string(text_.substr(inner, pos_ - inner)) + ">";
    KILN_RETURN_IF_ERROR(Expect('>', "to close 'complex<'"));
  }
  if (name == "index") return ir::DType::kS64;
  auto it = ElementTypes().find(name);
  if (it == ElementTypes().end()) {
    return ErrorAt(
        start, name.empty() ? "expected an element type" : "unknown element type '" + name + "'");
  }
  return it->second;
}

StatusOr<ir::Type> Parser::ParseType() {
  KILN_RETURN_IF_ERROR(Enter());
  struct Guard {
    Parser* p;
    ~Guard() { p->Leave(); }
  } guard{this};
  SkipSpace();
  const size_t start = pos_;
  if (Consume('!')) {
    const size_t name_start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '.' || text_[pos_] == '$')) {
      ++pos_;
    }
    const std::string name(text_.substr(name_start, pos_ - name_start));
    if (name == "stablehlo.token") return ir::Type::Token();
    if (name.find('.') == std::string::npos) {
      auto alias = type_aliases_.find(name);
      if (alias == type_aliases_.end()) return ErrorAt(start, "undefined type alias !" + name);
      if (std::find(alias_stack_.begin(), alias_stack_.end(), "!" + name) != alias_stack_.end()) {
        return ErrorAt(start, "type alias !" + name + " refers to itself");
      }
      alias_stack_.push_back("!" + name);
      const size_t saved = pos_;
      pos_ = alias->second;
      StatusOr<ir::Type> type = ParseType();
      pos_ = saved;
      alias_stack_.pop_back();
      return type;
    }
    // A dialect type Kiln does not interpret: kept by its spelling (balanced <...>).
    if (pos_ < text_.size() && text_[pos_] == '<') KILN_RETURN_IF_ERROR(SkipBalanced('<', '>'));
    return ir::Type::Opaque(std::string(text_.substr(start, pos_ - start)));
  }
  if (ConsumeKeyword("tensor")) {
    KILN_RETURN_IF_ERROR(Expect('<', "after 'tensor'"));
    std::vector<int64_t> dims;
    while (true) {
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '*')
        return Error("unranked tensors are not supported");
      if (pos_ < text_.size() && text_[pos_] == '?') {
        ++pos_;
        dims.push_back(ir::kDynamicDim);
      } else if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        int64_t d = 0;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
          if (d > (int64_t{1} << 50)) return Error("dimension size is out of range");
          d = d * 10 + (text_[pos_++] - '0');
        }
        dims.push_back(d);
      } else {
        break;
      }
      if (pos_ >= text_.size() || text_[pos_] != 'x')
        return Error("expected 'x' after a dimension");
      ++pos_;
    }
    KILN_ASSIGN_OR_RETURN(ir::DType dtype, ParseElementType());
    if (Consume(',')) KILN_RETURN_IF_ERROR(ParseAttr().status());  // encoding (bounds): unused
    KILN_RETURN_IF_ERROR(Expect('>', "to close the tensor type"));
    return ir::Type::Tensor(dtype, std::move(dims));
  }
  if (ConsumeKeyword("tuple")) {
    KILN_RETURN_IF_ERROR(Expect('<', "after 'tuple'"));
    std::vector<ir::Type> elements;
    if (!Consume('>')) {
      do {
        KILN_ASSIGN_OR_RETURN(ir::Type t, ParseType());
        elements.push_back(std::move(t));
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect('>', "to close the tuple type"));
    }
    return ir::Type::Tuple(std::move(elements));
  }
  if (PeekKeyword("none")) {
    pos_ += 4;
    return ir::Type::Opaque("none");
  }
  KILN_ASSIGN_OR_RETURN(ir::DType dtype, ParseElementType());
  return ir::Type::Tensor(dtype, {});
}

StatusOr<std::vector<ir::Type>> Parser::ParseTypeListParens() {
  KILN_RETURN_IF_ERROR(Expect('(', "to open a type list"));
  std::vector<ir::Type> types;
  if (Consume(')')) return types;
  do {
    KILN_ASSIGN_OR_RETURN(ir::Type t, ParseType());
    types.push_back(std::move(t));
  } while (Consume(','));
  KILN_RETURN_IF_ERROR(Expect(')', "to close a type list"));
  return types;
}

StatusOr<std::vector<ir::Type>> Parser::ParseResultTypes() {
  if (Peek() == '(') return ParseTypeListParens();
  KILN_ASSIGN_OR_RETURN(ir::Type t, ParseType());
  return std::vector<ir::Type>{std::move(t)};
}

Status Parser::ParseFunctionType(std::vector<ir::Type>& inputs, std::vector<ir::Type>& results) {
  KILN_ASSIGN_OR_RETURN(inputs, ParseTypeListParens());
  if (!ConsumeStr("->")) return Error("expected '->' in a function type");
  KILN_ASSIGN_OR_RETURN(results, ParseResultTypes());
  return Status::Ok();
}

Status Parser::ParseLocationBody(LocInfo& out, int depth) {
  if (depth > kMaxLocationDepth) return Error("locations nest too deeply");
  SkipSpace();
  if (ConsumeKeyword("unknown")) return Status::Ok();
  if (ConsumeKeyword("callsite")) {
    KILN_RETURN_IF_ERROR(Expect('(', "after 'callsite'"));
    KILN_RETURN_IF_ERROR(ParseLocationBody(out, depth + 1));
    KILN_RETURN_IF_ERROR(ExpectKeyword("at"));
    KILN_RETURN_IF_ERROR(ParseLocationBody(out, depth + 1));
    return Expect(')', "to close 'callsite('");
  }
  if (ConsumeKeyword("fused")) {
    if (Consume('<')) {
      KILN_RETURN_IF_ERROR(ParseAttr().status());
      KILN_RETURN_IF_ERROR(Expect('>', "to close the fused location's metadata"));
    }
    KILN_RETURN_IF_ERROR(Expect('[', "to open a fused location"));
    if (!Consume(']')) {
      do {
        KILN_RETURN_IF_ERROR(ParseLocationBody(out, depth + 1));
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect(']', "to close a fused location"));
    }
    return Status::Ok();
  }
  if (Peek() == '#') {
    const size_t start = pos_++;
    const size_t name_start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '$' || text_[pos_] == '.')) {
      ++pos_;
    }
    const std::string name(text_.substr(name_start, pos_ - name_start));
    if (auto cached = loc_cache_.find(name); cached != loc_cache_.end()) {
      Append(out, cached->second);
      return Status::Ok();
    }
    auto alias = attr_aliases_.find(name);
    if (alias == attr_aliases_.end()) return ErrorAt(start, "undefined location alias #" + name);
    // Locations are best effort (as in the bytecode reader): a chain past the bound adds nothing.
    if (depth + 1 > kMaxLocationDepth) return Status::Ok();
    if (std::find(alias_stack_.begin(), alias_stack_.end(), "#" + name) != alias_stack_.end()) {
      return ErrorAt(start, "location alias #" + name + " refers to itself");
    }
    alias_stack_.push_back("#" + name);
    const size_t saved = pos_;
    pos_ = alias->second;
    LocInfo info;
    Status s = ExpectKeyword("loc");
    if (s.ok()) s = Expect('(', "after 'loc'");
    if (s.ok()) s = ParseLocationBody(info, depth + 1);
    if (s.ok()) s = Expect(')', "to close the location");
    pos_ = saved;
    alias_stack_.pop_back();
    KILN_RETURN_IF_ERROR(s);
    Append(out, info);
    loc_cache_.emplace(name, std::move(info));
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(std::string text, ParseStringLiteral());
  if (Consume(':')) {  // FileLineColLoc / FileLineColRange
    LocFrame frame;
    frame.file = std::move(text);
    KILN_ASSIGN_OR_RETURN(int64_t line, ParseInt("a line number"));
    frame.line = static_cast<uint64_t>(line);
    if (Consume(':')) {
      KILN_ASSIGN_OR_RETURN(int64_t column, ParseInt("a column number"));
      frame.column = static_cast<uint64_t>(column);
    }
    if (ConsumeKeyword("to")) {
      if (Peek() != ':') KILN_RETURN_IF_ERROR(ParseInt("a line number").status());
      if (Consume(':')) KILN_RETURN_IF_ERROR(ParseInt("a column number").status());
    }
    if (out.frames.size() < kMaxLocationParts) out.frames.push_back(std::move(frame));
    return Status::Ok();
  }
  if (out.names.size() < kMaxLocationParts) out.names.push_back(text);
  if (Consume('(')) {  // NameLoc with a child location
    KILN_RETURN_IF_ERROR(ParseLocationBody(out, depth + 1));
    return Expect(')', "to close a named location");
  }
  return Status::Ok();
}

int32_t Parser::InternLocation(const LocInfo& info) {
  std::string text;
  if (!info.frames.empty()) {
    const LocFrame* chosen = &info.frames.front();
    for (const LocFrame& frame : info.frames) {
      if (!IsLibraryFrame(frame.file)) {
        chosen = &frame;
        break;
      }
    }
    text = chosen->file;
    if (chosen->line != 0) text += ":" + std::to_string(chosen->line);
    if (chosen->line != 0 && chosen->column != 0) text += ":" + std::to_string(chosen->column);
  }
  if (!info.names.empty()) {
    text += text.empty() ? info.names.front() : " (" + info.names.front() + ")";
  }
  if (text.empty()) return -1;
  auto [it, inserted] =
      loc_index_.try_emplace(text, static_cast<int32_t>(module_->locations.size()));
  if (inserted) module_->locations.push_back(text);
  return it->second;
}

}  // namespace kiln::ingest::text
