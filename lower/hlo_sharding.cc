#include "lower/hlo_sharding.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace kiln::lower {
namespace {

constexpr int64_t kMaxDevices = int64_t{1} << 20;  // as lower/sharding.cc bounds a mesh
constexpr int kMaxTupleDepth = 16;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<HloSharding> Parse() {
    KILN_ASSIGN_OR_RETURN(HloSharding s, Sharding(0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing characters");
    return s;
  }

 private:
  Status Error(const std::string& message) const {
    return InvalidArgument("malformed sharding \"" + std::string(text_) + "\" at offset " +
                           std::to_string(pos_) + ": " + message);
  }

  // Skips white space and /*...*/ comments (XLA prints `/*index=5*/` between tuple elements).
  void SkipSpace() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "/*") {
        const size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == std::string_view::npos ? text_.size() : end + 2;
      } else {
        return;
      }
    }
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Status Expect(char c) {
    if (!Consume(c)) return Error(std::string("expected '") + c + "'");
    return Status::Ok();
  }

  // A keyword: letters, digits and underscores; empty if none.
  std::string_view Word() {
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  StatusOr<int64_t> Integer() {
    SkipSpace();
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_] - '0');
      if (v > kMaxDevices) return Error("number too large");
      ++pos_;
    }
    if (pos_ == start) return Error("expected a number");
    return v;
  }

  // `[a,b,...]`, each entry >= 1 (or >= 0 when `allow_zero`).
  StatusOr<std::vector<int64_t>> List(bool allow_zero) {
    KILN_RETURN_IF_ERROR(Expect('['));
    std::vector<int64_t> out;
    if (Consume(']')) return Error("empty list");
    do {
      KILN_ASSIGN_OR_RETURN(int64_t v, Integer());
      if (v < 1 && !allow_zero) return Error("dimension must be positive");
      if (out.size() >= 64) return Error("too many dimensions");
      out.push_back(v);
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect(']'));
    return out;
  }

  static StatusOr<int64_t> Product(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
      n *= d;
      if (n > kMaxDevices) return InvalidArgument("more than 2^20 devices");
    }
    return n;
  }

  // `<=[reshape]` optionally `T(perm)`: the devices 0..N-1 laid out as `reshape`, transposed.
  StatusOr<std::vector<int64_t>> IotaAssignment(int64_t count) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reshape, List(false));
    StatusOr<int64_t> n = Product(reshape);
    if (!n.ok() || *n != count) {
      return Error("iota of " + (n.ok() ? std::to_string(*n) : std::string("too many")) +
                   " devices for a tile assignment of " + std::to_string(count));
    }
    std::vector<int64_t> perm(reshape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == 'T') {
      ++pos_;
      KILN_RETURN_IF_ERROR(Expect('('));
      perm.clear();
      do {
        KILN_ASSIGN_OR_RETURN(int64_t p, Integer());
        perm.push_back(p);
        if (perm.size() > reshape.size()) break;
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect(')'));
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (sorted.size() != reshape.size() || sorted[i] != static_cast<int64_t>(i)) {
          return Error("T(...) is not a permutation of the iota's " +
                       std::to_string(reshape.size()) + " dimensions");
        }
      }
    }
    // Element at transposed index j is the iota's element at index i with i[perm[k]] = j[k].
    const size_t rank = reshape.size();
    std::vector<int64_t> out_dims(rank), strides(rank, 1);
    for (size_t k = 0; k < rank; ++k) out_dims[k] = reshape[static_cast<size_t>(perm[k])];
    for (size_t k = rank - 1; k-- > 0;) strides[k] = strides[k + 1] * reshape[k + 1];
    std::vector<int64_t> devices(static_cast<size_t>(count));
    std::vector<int64_t> j(rank, 0);
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t source = 0;
      for (size_t k = 0; k < rank; ++k) source += j[k] * strides[static_cast<size_t>(perm[k])];
      devices[static_cast<size_t>(flat)] = source;
      for (size_t k = rank; k-- > 0;) {
        if (++j[k] < out_dims[k]) break;
        j[k] = 0;
      }
    }
    return devices;
  }

  Status Tiled(HloSharding& s) {
    s.kind = HloSharding::Kind::kTiled;
    KILN_RETURN_IF_ERROR(Expect('='));
    KILN_ASSIGN_OR_RETURN(s.tile_dims, List(false));
    StatusOr<int64_t> count = Product(s.tile_dims);
    if (!count.ok()) return Error("the tile assignment has more than 2^20 devices");
    SkipSpace();
    if (text_.substr(pos_, 2) == "<=") {
      pos_ += 2;
      KILN_ASSIGN_OR_RETURN(s.devices, IotaAssignment(*count));
    } else {
      do {
        KILN_ASSIGN_OR_RETURN(int64_t d, Integer());
        if (static_cast<int64_t>(s.devices.size()) >= *count) {
          return Error("more devices than the tile assignment's " + std::to_string(*count));
        }
        s.devices.push_back(d);
      } while (Consume(','));
    }
    if (static_cast<int64_t>(s.devices.size()) != *count) {
      return Error("the tile assignment lists " + std::to_string(s.devices.size()) +
                   " devices, its dimensions hold " + std::to_string(*count));
    }
    std::vector<bool> seen(static_cast<size_t>(*count), false);
    for (int64_t d : s.devices) {
      if (d >= *count || seen[static_cast<size_t>(d)]) {
        return Error("the tile assignment is not a permutation of devices 0.." +
                     std::to_string(*count - 1));
      }
      seen[static_cast<size_t>(d)] = true;
    }
    return Status::Ok();
  }

  StatusOr<HloSharding::Subgroup> SubgroupKind() {
    const std::string_view word = Word();
    if (word == "replicated") return HloSharding::Subgroup::kReplicated;
    if (word == "manual") return HloSharding::Subgroup::kManual;
    if (word == "unreduced") return HloSharding::Subgroup::kUnreduced;
    if (word == "maximal") return HloSharding::Subgroup::kMaximal;
    return Error("unknown subgroup type \"" + std::string(word) + "\"");
  }

  // Skips a balanced `{...}` (metadata), honouring quoted strings.
  Status SkipBraces() {
    KILN_RETURN_IF_ERROR(Expect('{'));
    int depth = 1;
    bool quoted = false;
    while (pos_ < text_.size() && depth > 0) {
      const char c = text_[pos_++];
      if (quoted) {
        if (c == '\\' && pos_ < text_.size()) ++pos_;
        if (c == '"') quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        --depth;
      }
    }
    if (depth != 0) return Error("unterminated metadata");
    return Status::Ok();
  }

  // The attributes after a leaf's kind, up to its closing brace.
  Status Trailer(HloSharding& s) {
    bool replicate_last = false;
    while (true) {
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '}') break;
      const std::string_view word = Word();
      if (word == "last_tile_dim_replicate" && s.kind == HloSharding::Kind::kTiled) {
        replicate_last = true;
      } else if (word == "last_tile_dims" && s.kind == HloSharding::Kind::kTiled) {
        KILN_RETURN_IF_ERROR(Expect('='));
        KILN_RETURN_IF_ERROR(Expect('{'));
        do {
          KILN_ASSIGN_OR_RETURN(HloSharding::Subgroup kind, SubgroupKind());
          if (s.subgroups.size() >= s.tile_dims.size()) return Error("too many subgroups");
          s.subgroups.push_back(kind);
        } while (Consume(','));
        KILN_RETURN_IF_ERROR(Expect('}'));
      } else if (word == "shard_as" || word == "shard_like") {
        KILN_RETURN_IF_ERROR(Integer().status());
      } else if (word == "metadata") {
        KILN_RETURN_IF_ERROR(Expect('='));
        KILN_RETURN_IF_ERROR(SkipBraces());
      } else {
        return Error(word.empty() ? "expected an attribute or '}'"
                                  : "unexpected \"" + std::string(word) + "\"");
      }
    }
    if (replicate_last) {
      if (!s.subgroups.empty()) return Error("both last_tile_dim_replicate and last_tile_dims");
      s.subgroups.push_back(HloSharding::Subgroup::kReplicated);
    }
    if (s.kind == HloSharding::Kind::kTiled && s.subgroups.size() > s.tile_dims.size()) {
      return Error("more subgroups than tile dimensions");
    }
    return Status::Ok();
  }

  StatusOr<HloSharding> Sharding(int depth) {
    if (depth > kMaxTupleDepth) return Error("tuples nested too deeply");
    KILN_RETURN_IF_ERROR(Expect('{'));
    HloSharding s;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '{') {  // a tuple
      s.kind = HloSharding::Kind::kTuple;
      do {
        KILN_ASSIGN_OR_RETURN(HloSharding element, Sharding(depth + 1));
        s.elements.push_back(std::move(element));
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect('}'));
      return s;
    }
    if (Consume('}')) {  // an empty tuple
      s.kind = HloSharding::Kind::kTuple;
      return s;
    }
    const std::string_view word = Word();
    if (word == "replicated") {
      s.kind = HloSharding::Kind::kReplicated;
    } else if (word == "manual") {
      s.kind = HloSharding::Kind::kManual;
    } else if (word == "unknown") {
      s.kind = HloSharding::Kind::kUnknown;
    } else if (word == "unreduced") {
      s.kind = HloSharding::Kind::kUnreduced;
    } else if (word == "maximal") {
      s.kind = HloSharding::Kind::kMaximal;
      if (Word() != "device") return Error("expected device=N");
      KILN_RETURN_IF_ERROR(Expect('='));
      KILN_ASSIGN_OR_RETURN(s.device, Integer());
    } else if (word == "devices") {
      KILN_RETURN_IF_ERROR(Tiled(s));
    } else {
      return Error(word.empty() ? "expected a sharding kind"
                                : "unknown sharding kind \"" + std::string(word) + "\"");
    }
    KILN_RETURN_IF_ERROR(Trailer(s));
    KILN_RETURN_IF_ERROR(Expect('}'));
    return s;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string KindName(const HloSharding& s) {
  switch (s.kind) {
    case HloSharding::Kind::kManual:
      return "manual";
    case HloSharding::Kind::kUnknown:
      return "unknown";
    case HloSharding::Kind::kMaximal:
      return "maximal device=" + std::to_string(s.device);
    default:
      return "";
  }
}

}  // namespace

StatusOr<HloSharding> ParseHloSharding(std::string_view text) {
  if (text.size() > (size_t{1} << 24)) return InvalidArgument("sharding text too long");
  return Parser(text).Parse();
}

StatusOr<TensorSharding> ToTensorSharding(const HloSharding& sharding, const ir::Type& type,
                                          int64_t devices, const std::string& what) {
  const size_t rank = type.is_tensor() ? type.dims.size() : 0;
  TensorSharding out;
  out.dims.resize(rank);
  switch (sharding.kind) {
    case HloSharding::Kind::kTuple:
      if (sharding.elements.size() == 1) {
        return ToTensorSharding(sharding.elements[0], type, devices, what);
      }
      return InvalidArgument(what + ": a tuple sharding of " +
                             std::to_string(sharding.elements.size()) + " elements for " +
                             type.ToString());
    case HloSharding::Kind::kReplicated:
      return out;
    case HloSharding::Kind::kMaximal:
      if (devices == 1 && sharding.device == 0) return out;
      [[fallthrough]];
    case HloSharding::Kind::kManual:
    case HloSharding::Kind::kUnknown:
      return Unimplemented(what + ": GSPMD sharding {" + KindName(sharding) +
                           "} is not supported by Kiln's partitioner");
    case HloSharding::Kind::kUnreduced:
      out.mesh.name = "gspmd";
      out.mesh.axis_names = {"t0"};
      out.mesh.axis_sizes = {devices};
      if (devices > 1) out.unreduced = {0};
      return out;
    case HloSharding::Kind::kTiled:
      break;
  }
  if (sharding.data_rank() != rank) {
    return InvalidArgument(what + ": the GSPMD sharding tiles " +
                           std::to_string(sharding.data_rank()) + " dimensions, the value is " +
                           type.ToString());
  }
  out.mesh.name = "gspmd";
  out.mesh.device_ids = sharding.devices;
  for (size_t a = 0; a < sharding.tile_dims.size(); ++a) {
    out.mesh.axis_names.push_back("t" + std::to_string(a));
    out.mesh.axis_sizes.push_back(sharding.tile_dims[a]);
  }
  for (size_t d = 0; d < rank; ++d) {
    if (sharding.tile_dims[d] == 1) continue;
    out.dims[d].push_back(AxisRef{static_cast<int>(d), 1, sharding.tile_dims[d]});
    if (type.dims[d] % sharding.tile_dims[d] != 0) {
      return Unimplemented(what + ": dimension " + std::to_string(d) + " of " + type.ToString() +
                           " does not split evenly into " + std::to_string(sharding.tile_dims[d]) +
                           " shards; Kiln supports even shardings only");
    }
  }
  for (size_t k = 0; k < sharding.subgroups.size(); ++k) {
    const int axis = static_cast<int>(rank + k);
    switch (sharding.subgroups[k]) {
      case HloSharding::Subgroup::kReplicated:
        break;
      case HloSharding::Subgroup::kUnreduced:
        if (sharding.tile_dims[rank + k] > 1) out.unreduced.push_back(axis);
        break;
      case HloSharding::Subgroup::kManual:
      case HloSharding::Subgroup::kMaximal:
        if (sharding.tile_dims[rank + k] == 1) break;
        return Unimplemented(what + ": GSPMD sharding with a " +
                             (sharding.subgroups[k] == HloSharding::Subgroup::kManual
                                  ? std::string("manual")
                                  : std::string("maximal")) +
                             " subgroup is not supported by Kiln's partitioner");
    }
  }
  return out;
}

StatusOr<std::vector<TensorSharding>> ToTensorShardings(const ir::Attr* list,
                                                        const std::vector<ir::Type>& types,
                                                        int64_t devices, const std::string& what) {
  if (list == nullptr || list->kind != ir::Attr::Kind::kArray ||
      list->array.size() != types.size()) {
    return InvalidArgument(what + ": expected " + std::to_string(types.size()) + " sharding texts");
  }
  std::vector<TensorSharding> out;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string name = what + " #" + std::to_string(i);
    const ir::Attr& text = list->array[i];
    if (text.kind != ir::Attr::Kind::kString) return InvalidArgument(name + ": not a string");
    StatusOr<HloSharding> parsed = ParseHloSharding(text.str);
    if (!parsed.ok()) return parsed.status().WithContext(name);
    KILN_ASSIGN_OR_RETURN(TensorSharding s, ToTensorSharding(*parsed, types[i], devices, name));
    if (!s.IsReplicated() && s.mesh.num_devices() != devices) {
      return Unimplemented(name + " is split over " + std::to_string(s.mesh.num_devices()) +
                           " devices, but the program runs on " + std::to_string(devices));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kiln::lower
