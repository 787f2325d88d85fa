// The backend_config of a typed-FFI custom call in HLO: XLA prints the op's MLIR attribute
// dictionary as text, e.g. `{mode = 86 : ui8, uplo = 76 : ui8}`. Kiln's custom-call kernels read
// it as the dictionary attribute StableHLO carries, so the text is parsed back: integers, booleans,
// floats and strings; other values are kept opaque (a kernel that needs one reports it missing).
#include <cctype>
#include <cstdlib>
#include <string>

#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {
namespace {

class ConfigParser {
 public:
  explicit ConfigParser(std::string_view text) : text_(text) {}

  StatusOr<ir::Attr> Dict() {
    SkipSpace();
    if (!Eat('{')) return Error("expected '{'");
    std::vector<std::pair<std::string, ir::Attr>> entries;
    SkipSpace();
    if (Eat('}')) return Done(ir::Attr::Dict(std::move(entries)));
    while (true) {
      SkipSpace();
      std::string key = Identifier();
      if (key.empty()) return Error("expected an attribute name");
      SkipSpace();
      ir::Attr value = ir::Attr::Unit();
      if (Eat('=')) {
        SkipSpace();
        KILN_ASSIGN_OR_RETURN(value, Value());
      }
      entries.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (Eat('}')) return Done(ir::Attr::Dict(std::move(entries)));
      if (!Eat(',')) return Error("expected ',' or '}'");
    }
  }

 private:
  StatusOr<ir::Attr> Done(ir::Attr dict) {
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the dictionary");
    return dict;
  }

  StatusOr<ir::Attr> Value() {
    if (Eat('"')) {
      std::string s;
      while (pos_ < text_.size() && text_[pos_] != '"') {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
        s += text_[pos_++];
      }
      if (!Eat('"')) return Error("unterminated string");
      return ir::Attr::String(std::move(s));
    }
    const size_t start = pos_;
    int nesting = 0;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '<' || c == '[' || c == '(' || c == '{') ++nesting;
      if (c == '>' || c == ']' || c == ')' || c == '}') {
        if (nesting == 0) break;
        --nesting;
      }
      if (c == ',' && nesting == 0) break;
      ++pos_;
    }
    std::string token(text_.substr(start, pos_ - start));
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
    if (token == "true" || token == "false") return ir::Attr::Bool(token == "true");
    std::string number = token, type;
    if (const size_t colon = token.find(" : "); colon != std::string::npos) {
      number = token.substr(0, colon);
      type = token.substr(colon + 3);
    }
    if (!number.empty()) {
      char* end = nullptr;
      const bool is_float = number.find_first_of(".eE") != std::string::npos &&
                            number.find("0x") == std::string::npos;
      if (!is_float) {
        const long long v = std::strtoll(number.c_str(), &end, 0);
        if (end != nullptr && *end == '\0') return ir::Attr::Int(v);
      } else {
        const double v = std::strtod(number.c_str(), &end);
        if (end != nullptr && *end == '\0') return ir::Attr::Float(v);
      }
    }
    return ir::Attr::Opaque(token);
  }

  std::string Identifier() {
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status Error(std::string_view what) const {
    return InvalidArgument("backend_config '" + std::string(text_) + "': " + std::string(what) +
                           " at character " + std::to_string(pos_));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<ir::Attr> TypedFfiBackendConfig(std::string_view text) {
  if (text.empty()) return ir::Attr::Dict({});
  return ConfigParser(text).Dict();
}

}  // namespace kiln::ingest::hlo
