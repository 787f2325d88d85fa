// Scanning: whitespace and comments, punctuation, identifiers, string and number literals, and
// errors that name "<text>:line:col".
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {

void Parser::SkipSpace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

bool Parser::AtEnd() {
  SkipSpace();
  return pos_ >= text_.size();
}

char Parser::Peek() {
  SkipSpace();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

char Parser::PeekAt(size_t ahead) {
  SkipSpace();
  return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
}

bool Parser::Consume(char c) {
  if (Peek() != c) return false;
  ++pos_;
  return true;
}

bool Parser::ConsumeStr(std::string_view s) {
  SkipSpace();
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

bool Parser::PeekKeyword(std::string_view keyword) {
  SkipSpace();
  if (text_.substr(pos_, keyword.size()) != keyword) return false;
  const size_t end = pos_ + keyword.size();
  return end >= text_.size() || !IsIdChar(text_[end]);
}

bool Parser::ConsumeKeyword(std::string_view keyword) {
  if (!PeekKeyword(keyword)) return false;
  pos_ += keyword.size();
  return true;
}

Status Parser::Expect(char c, std::string_view what) {
  if (Consume(c)) return Status::Ok();
  if (pos_ >= text_.size()) {
    return Error("expected '" + std::string(1, c) + "' " + std::string(what) +
                 ", found the end of the text");
  }
  return Error("expected '" + std::string(1, c) + "' " + std::string(what) + ", found '" +
               std::string(1, text_[pos_]) + "'");
}

Status Parser::ExpectKeyword(std::string_view keyword) {
  if (ConsumeKeyword(keyword)) return Status::Ok();
  return Error("expected '" + std::string(keyword) + "'");
}

std::string Parser::Where(size_t pos) const {
  pos = std::min(pos, text_.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "<text>:" + std::to_string(line) + ":" + std::to_string(column);
}

Status Parser::Positioned(Status status, size_t pos) const {
  if (status.ok() || status.message().rfind("<text>:", 0) == 0) return status;
  return Status(status.code(), Where(pos) + ": " + status.message());
}

Status Parser::ErrorAt(size_t pos, std::string message) const {
  return InvalidArgument(Where(pos) + ": " + message);
}

Status Parser::Enter() {
  if (++depth_ > limits_.max_nesting) {
    --depth_;
    return ResourceExhausted(Where(pos_) + ": attributes and types nest deeper than " +
                             std::to_string(limits_.max_nesting) + " levels");
  }
  return Status::Ok();
}

StatusOr<std::string> Parser::ParseBareId(std::string_view what) {
  SkipSpace();
  if (pos_ >= text_.size() || !IsIdStart(text_[pos_])) {
    return Error("expected " + std::string(what));
  }
  const size_t start = pos_;
  while (pos_ < text_.size() && IsIdChar(text_[pos_])) ++pos_;
  return std::string(text_.substr(start, pos_ - start));
}

StatusOr<std::string> Parser::ParseStringLiteral() {
  SkipSpace();
  if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a string literal");
  const size_t start = pos_++;
  std::string out;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') {
      return ErrorAt(start, "string literal is not terminated");
    }
    const char c = text_[pos_++];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= text_.size()) return ErrorAt(start, "string literal is not terminated");
    const char e = text_[pos_++];
    if (e == '"' || e == '\\') {
      out += e;
    } else if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (std::isxdigit(static_cast<unsigned char>(e)) && pos_ < text_.size() &&
               std::isxdigit(static_cast<unsigned char>(text_[pos_]))) {
      const char hex[3] = {e, text_[pos_++], 0};
      out += static_cast<char>(std::strtol(hex, nullptr, 16));
    } else {
      return ErrorAt(pos_ - 2, "unknown escape '\\" + std::string(1, e) + "' in string literal");
    }
  }
  return out;
}

StatusOr<std::string> Parser::ParseSymbolName() {
  KILN_RETURN_IF_ERROR(Expect('@', "before a symbol name"));
  if (pos_ < text_.size() && text_[pos_] == '"') return ParseStringLiteral();
  const size_t start = pos_;
  while (pos_ < text_.size() && IsIdChar(text_[pos_])) ++pos_;
  if (pos_ == start) return Error("expected a symbol name after '@'");
  return std::string(text_.substr(start, pos_ - start));
}

StatusOr<int64_t> Parser::ParseInt(std::string_view what) {
  SkipSpace();
  const size_t start = pos_;
  bool negative = false;
  if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) {
    negative = text_[pos_] == '-';
    ++pos_;
  }
  int base = 10;
  if (text_.substr(pos_, 2) == "0x") {
    base = 16;
    pos_ += 2;
  }
  const char* first = text_.data() + pos_;
  uint64_t magnitude = 0;
  auto [ptr, ec] = std::from_chars(first, text_.data() + text_.size(), magnitude, base);
  if (ptr == first) {
    pos_ = start;
    return Error("expected " + std::string(what));
  }
  if (ec != std::errc() ||
      magnitude > (negative ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX))) {
    return ErrorAt(start, std::string(what) + " is out of range");
  }
  pos_ += static_cast<size_t>(ptr - first);
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

StatusOr<double> Parser::ParseFloatValue() {
  SkipSpace();
  const size_t start = pos_;
  size_t end = pos_;
  if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
  while (end < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[end])) ||
                                text_[end] == '.' || text_[end] == 'e' || text_[end] == 'E' ||
                                ((text_[end] == '-' || text_[end] == '+') &&
                                 (text_[end - 1] == 'e' || text_[end - 1] == 'E')))) {
    ++end;
  }
  const std::string token(text_.substr(start, end - start));
  if (token.empty()) return Error("expected a number");
  char* stop = nullptr;
  const double value = std::strtod(token.c_str(), &stop);
  if (stop != token.c_str() + token.size()) return Error("malformed number '" + token + "'");
  pos_ = end;
  return value;
}

}  // namespace kiln::ingest::text
