// The custom (pretty) forms of the stablehlo and func ops, as StableHLO's and MLIR's printers
// write them (stablehlo/dialect/StablehloOps.td assemblyFormat, AssemblyFormat.cpp). Most follow
// one pattern, handled by one routine:
//   [head] %operand, ..., keyword = value, ... [{attr-dict}] : types
// where the head is op-specific (`compare GT,`, `custom_call @target(...)`, `convolution(...)`),
// keywords map onto the op's attributes, and `types` is a single type (operands and results
// alike), a type list, or a function type. reduce and while have their own layouts.
#include "ingest/text_pretty_ops.h"

#include <cctype>
#include <unordered_map>

namespace kiln::ingest::text {
namespace {

// The attribute a keyword of a pretty form names, by op.
std::string KeywordAttr(std::string_view op, std::string_view keyword) {
  if (keyword == "dims") {
    if (op == "transpose") return "permutation";
    if (op == "reverse") return "dimensions";
    return "broadcast_dimensions";
  }
  if (keyword == "sizes") return op == "broadcast" ? "broadcast_sizes" : "slice_sizes";
  if (keyword == "dim") {
    if (op == "iota" || op == "dynamic_iota") return "iota_dimension";
    return "dimension";
  }
  if (keyword == "low") return "edge_padding_low";
  if (keyword == "high") return "edge_padding_high";
  if (keyword == "interior") return "interior_padding";
  if (keyword == "type") return "fft_type";
  if (keyword == "length") return "fft_length";
  if (keyword == "distribution") return "rng_distribution";
  if (keyword == "algorithm") return op == "rng_bit_generator" ? "rng_algorithm" : "algorithm";
  if (keyword == "lower") return "lower";
  if (keyword == "config") return "einsum_config";
  if (keyword == "precision") return "precision_config";
  if (keyword == "dim_numbers") return "dimension_numbers";
  return "";
}

}  // namespace

// Ops whose pretty form is `op [head] operands ... : types` (no regions).
bool HasCommonForm(std::string_view op) {
  static const auto* ops =
      new std::unordered_map<std::string_view, bool>{{"abs", true},
                                                     {"add", true},
                                                     {"after_all", true},
                                                     {"and", true},
                                                     {"atan2", true},
                                                     {"bitcast_convert", true},
                                                     {"broadcast", true},
                                                     {"broadcast_in_dim", true},
                                                     {"cbrt", true},
                                                     {"ceil", true},
                                                     {"cholesky", true},
                                                     {"clamp", true},
                                                     {"compare", true},
                                                     {"complex", true},
                                                     {"concatenate", true},
                                                     {"constant", true},
                                                     {"convert", true},
                                                     {"convolution", true},
                                                     {"cosine", true},
                                                     {"count_leading_zeros", true},
                                                     {"create_token", true},
                                                     {"custom_call", true},
                                                     {"divide", true},
                                                     {"dot", true},
                                                     {"dot_general", true},
                                                     {"dynamic_broadcast_in_dim", true},
                                                     {"dynamic_iota", true},
                                                     {"dynamic_pad", true},
                                                     {"dynamic_reshape", true},
                                                     {"dynamic_slice", true},
                                                     {"dynamic_update_slice", true},
                                                     {"einsum", true},
                                                     {"exponential", true},
                                                     {"exponential_minus_one", true},
                                                     {"fft", true},
                                                     {"floor", true},
                                                     {"get_dimension_size", true},
                                                     {"get_tuple_element", true},
                                                     {"imag", true},
                                                     {"iota", true},
                                                     {"is_finite", true},
                                                     {"log", true},
                                                     {"log_plus_one", true},
                                                     {"logistic", true},
                                                     {"maximum", true},
                                                     {"minimum", true},
                                                     {"multiply", true},
                                                     {"negate", true},
                                                     {"not", true},
                                                     {"optimization_barrier", true},
                                                     {"or", true},
                                                     {"pad", true},
                                                     {"partition_id", true},
                                                     {"popcnt", true},
                                                     {"power", true},
                                                     {"real", true},
                                                     {"real_dynamic_slice", true},
                                                     {"reduce_precision", true},
                                                     {"remainder", true},
                                                     {"replica_id", true},
                                                     {"reshape", true},
                                                     {"return", true},
                                                     {"reverse", true},
                                                     {"rng", true},
                                                     {"rng_bit_generator", true},
                                                     {"round_nearest_afz", true},
                                                     {"round_nearest_even", true},
                                                     {"rsqrt", true},
                                                     {"select", true},
                                                     {"set_dimension_size", true},
                                                     {"shift_left", true},
                                                     {"shift_right_arithmetic", true},
                                                     {"shift_right_logical", true},
                                                     {"sign", true},
                                                     {"sine", true},
                                                     {"slice", true},
                                                     {"sqrt", true},
                                                     {"subtract", true},
                                                     {"tan", true},
                                                     {"tanh", true},
                                                     {"transpose", true},
                                                     {"tuple", true},
                                                     {"unary_einsum", true},
                                                     {"uniform_dequantize", true},
                                                     {"uniform_quantize", true},
                                                     {"xor", true},
                                                     {"composite", true}};
  return ops->count(op) != 0;
}

Status PrettyOps::DotDims(const std::string& keyword) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs, p_.ParseIntListBrackets());
  if (!p_.Consume('x')) return p_.Error("expected 'x' between the lhs and rhs dimensions");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs, p_.ParseIntListBrackets());
  const std::string kind = keyword == "batching_dims" ? "batching" : "contracting";
  dot_dims_.dict.emplace_back("lhs_" + kind + "_dimensions", ir::Attr::IntArray(lhs));
  dot_dims_.dict.emplace_back("rhs_" + kind + "_dimensions", ir::Attr::IntArray(rhs));
  return Status::Ok();
}

Status PrettyOps::Window() {
  KILN_RETURN_IF_ERROR(p_.Expect('{', "to open the convolution window"));
  if (p_.Consume('}')) return Status::Ok();
  do {
    KILN_ASSIGN_OR_RETURN(std::string key, p_.ParseBareId("a window attribute"));
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after " + key));
    if (key == "pad") {
      KILN_RETURN_IF_ERROR(p_.Expect('[', "to open the padding"));
      std::vector<int64_t> values;
      if (!p_.Consume(']')) {
        do {
          KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pair, p_.ParseIntListBrackets());
          if (pair.size() != 2) return p_.Error("padding entries are [low, high] pairs");
          values.insert(values.end(), pair.begin(), pair.end());
        } while (p_.Consume(','));
        KILN_RETURN_IF_ERROR(p_.Expect(']', "to close the padding"));
      }
      const auto n = static_cast<int64_t>(values.size() / 2);
      props_.push_back({"padding", DenseOf(ir::DType::kS64, {n, 2}, values)});
    } else if (key == "reverse") {
      KILN_RETURN_IF_ERROR(p_.Expect('[', "to open the window reversal"));
      std::vector<int64_t> values;
      if (!p_.Consume(']')) {
        do {
          if (p_.ConsumeKeyword("true")) {
            values.push_back(1);
          } else if (p_.ConsumeKeyword("false")) {
            values.push_back(0);
          } else {
            KILN_ASSIGN_OR_RETURN(int64_t v, p_.ParseInt("true or false"));
            values.push_back(v != 0);
          }
        } while (p_.Consume(','));
        KILN_RETURN_IF_ERROR(p_.Expect(']', "to close the window reversal"));
      }
      props_.push_back({"window_reversal",
                        DenseOf(ir::DType::kPred, {static_cast<int64_t>(values.size())}, values)});
    } else {
      const char* name = key == "stride"       ? "window_strides"
                         : key == "lhs_dilate" ? "lhs_dilation"
                         : key == "rhs_dilate" ? "rhs_dilation"
                                               : nullptr;
      if (name == nullptr) return p_.Error("unknown window attribute '" + key + "'");
      KILN_ASSIGN_OR_RETURN(ir::Attr list, IntListAttr());
      props_.push_back({name, std::move(list)});
    }
  } while (p_.Consume(','));
  return p_.Expect('}', "to close the convolution window");
}

Status PrettyOps::SliceRanges() {
  KILN_RETURN_IF_ERROR(p_.Expect('[', "to open the slice ranges"));
  std::vector<int64_t> start, limit, stride;
  if (!p_.Consume(']')) {
    do {
      KILN_ASSIGN_OR_RETURN(int64_t s, p_.ParseInt("a slice start"));
      KILN_RETURN_IF_ERROR(p_.Expect(':', "in a slice range"));
      KILN_ASSIGN_OR_RETURN(int64_t l, p_.ParseInt("a slice limit"));
      int64_t st = 1;
      if (p_.Consume(':')) {
        KILN_ASSIGN_OR_RETURN(st, p_.ParseInt("a slice stride"));
      }
      start.push_back(s);
      limit.push_back(l);
      stride.push_back(st);
    } while (p_.Consume(','));
    KILN_RETURN_IF_ERROR(p_.Expect(']', "to close the slice ranges"));
  }
  props_.push_back({"start_indices", I64Tensor(start)});
  props_.push_back({"limit_indices", I64Tensor(limit)});
  props_.push_back({"strides", I64Tensor(stride)});
  return Status::Ok();
}

Status PrettyOps::Keyword(std::string_view short_name, const std::string& keyword) {
  KILN_RETURN_IF_ERROR(p_.Expect('=', "after '" + keyword + "'"));
  if (keyword == "batching_dims" || keyword == "contracting_dims") return DotDims(keyword);
  if (keyword == "window") return Window();
  const std::string attr = keyword == "format" ? "format" : KeywordAttr(short_name, keyword);
  if (attr.empty())
    return p_.Error("unknown keyword '" + keyword + "' in stablehlo." + std::string(short_name));
  ir::Attr value;
  if (keyword == "format") {
    KILN_ASSIGN_OR_RETURN(std::string f, p_.ParseBareId("a format e#m#"));
    const size_t m = f.find('m');
    if (f.size() < 4 || f[0] != 'e' || m == std::string::npos || m + 1 >= f.size()) {
      return p_.Error("expected a format e#m#, not '" + f + "'");
    }
    const std::string e = f.substr(1, m - 1), man = f.substr(m + 1);
    for (char c : e + man) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return p_.Error("expected e#m#, not " + f);
    }
    if (e.size() > 6 || man.size() > 6) return p_.Error("format " + f + " is out of range");
    const ir::Type i32 = ir::Type::Tensor(ir::DType::kS32, {});
    props_.push_back({"exponent_bits", ir::Attr::Int(std::stoll(e), i32)});
    props_.push_back({"mantissa_bits", ir::Attr::Int(std::stoll(man), i32)});
    return Status::Ok();
  }
  if (keyword == "dim_numbers") {
    KILN_ASSIGN_OR_RETURN(value, p_.ParseConvDims());
  } else if (keyword == "precision") {
    KILN_RETURN_IF_ERROR(p_.Expect('[', "to open the precision list"));
    std::vector<ir::Attr> list;
    if (!p_.Consume(']')) {
      do {
        KILN_ASSIGN_OR_RETURN(std::string v, p_.ParseBareId("a precision"));
        list.push_back(ir::Attr::Enum(std::move(v)));
      } while (p_.Consume(','));
      KILN_RETURN_IF_ERROR(p_.Expect(']', "to close the precision list"));
    }
    value = ir::Attr::Array(std::move(list));
  } else if (keyword == "algorithm" && short_name == "dot_general") {
    KILN_ASSIGN_OR_RETURN(value, p_.ParseStructuredBody("algorithm"));
  } else if (keyword == "type" || keyword == "distribution" || keyword == "algorithm") {
    KILN_ASSIGN_OR_RETURN(std::string v, p_.ParseBareId("an enum value"));
    value = ir::Attr::Enum(std::move(v));
  } else if (p_.Peek() == '[') {
    KILN_ASSIGN_OR_RETURN(value, IntListAttr());
  } else if (keyword == "dim") {  // I64Attr printed without its type
    KILN_ASSIGN_OR_RETURN(int64_t v, p_.ParseInt("a dimension"));
    value = ir::Attr::Int(v);
  } else if (keyword == "lower") {
    if (p_.ConsumeKeyword("true")) {
      value = ir::Attr::Bool(true);
    } else if (p_.ConsumeKeyword("false")) {
      value = ir::Attr::Bool(false);
    } else {
      return p_.Error("expected true or false");
    }
  } else {
    KILN_ASSIGN_OR_RETURN(value, p_.ParseAttr());
  }
  props_.push_back({attr, std::move(value)});
  return Status::Ok();
}

// `: T` (operands and result alike), `: T1, T2` (select: predicate and value), `: (ins) -> outs`.
Status PrettyOps::Types(std::string_view short_name) {
  if (short_name == "return") {
    if (op_.operands.empty()) return Status::Ok();
    KILN_RETURN_IF_ERROR(p_.Expect(':', "before the types of the returned values"));
    do {
      KILN_RETURN_IF_ERROR(p_.ParseType().status());
    } while (p_.Consume(','));
    return Status::Ok();
  }
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of stablehlo." + std::string(short_name)));
  if (p_.Peek() == '(') {
    std::vector<ir::Type> inputs;
    KILN_RETURN_IF_ERROR(p_.ParseFunctionType(inputs, results_));
    if (inputs.size() != op_.operands.size()) {
      return p_.Error("stablehlo." + std::string(short_name) + " has " +
                      std::to_string(op_.operands.size()) + " operand(s) but " +
                      std::to_string(inputs.size()) + " operand type(s)");
    }
    return Status::Ok();
  }
  std::vector<ir::Type> list;
  do {
    KILN_ASSIGN_OR_RETURN(ir::Type t, p_.ParseType());
    list.push_back(std::move(t));
  } while (p_.Consume(','));
  if (short_name == "optimization_barrier") {
    results_ = std::move(list);
  } else if (short_name == "select" && list.size() == 2) {
    results_ = {list[1]};
  } else if (list.size() == 1) {
    results_ = std::move(list);
  } else {
    return p_.Error("expected one type or a function type for stablehlo." +
                    std::string(short_name));
  }
  return Status::Ok();
}

Status PrettyOps::Common(std::string_view short_name) {
  if (short_name == "constant") {
    AttrList dict;
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    KILN_ASSIGN_OR_RETURN(ir::Attr value, p_.ParseAttr());
    if (value.kind != ir::Attr::Kind::kElements) {
      return p_.Error("stablehlo.constant expects a dense literal");
    }
    results_ = {value.type};
    props_.push_back({"value", std::move(value)});
    return Finish(std::move(dict));
  }
  if (short_name == "compare") {
    KILN_ASSIGN_OR_RETURN(std::string direction, p_.ParseBareId("a comparison direction"));
    props_.push_back({"comparison_direction", ir::Attr::Enum(std::move(direction))});
    KILN_RETURN_IF_ERROR(p_.Expect(',', "after the comparison direction"));
  } else if (short_name == "custom_call") {
    std::string target;
    if (p_.Peek() == '"') {
      KILN_ASSIGN_OR_RETURN(target, p_.ParseStringLiteral());
    } else {
      KILN_ASSIGN_OR_RETURN(target, p_.ParseSymbolName());
    }
    props_.push_back({"call_target_name", ir::Attr::String(std::move(target))});
  } else if (short_name == "composite") {
    KILN_ASSIGN_OR_RETURN(std::string name, p_.ParseStringLiteral());
    props_.push_back({"name", ir::Attr::String(std::move(name))});
  }
  const bool parenthesized = short_name == "custom_call" || short_name == "convolution";
  if (parenthesized) KILN_RETURN_IF_ERROR(p_.Expect('(', "to open the operands"));
  KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
  if (parenthesized) KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the operands"));
  if (short_name == "slice") KILN_RETURN_IF_ERROR(SliceRanges());
  if (short_name == "get_tuple_element") {
    KILN_RETURN_IF_ERROR(p_.Expect('[', "before the tuple index"));
    KILN_ASSIGN_OR_RETURN(int64_t index, p_.ParseInt("a tuple index"));
    KILN_RETURN_IF_ERROR(p_.Expect(']', "after the tuple index"));
    props_.push_back({"index", ir::Attr::Int(index, ir::Type::Tensor(ir::DType::kS32, {}))});
  }
  // Keywords: `, kw = value` (the first may follow the operands directly: `iota dim = 0`,
  // `convolution(...) dim_numbers = ...`, `dynamic_slice %0, %1, sizes = [...]`).
  bool first = true;
  while (true) {
    const size_t before = p_.pos_;
    const bool comma = p_.Consume(',');
    if (!comma && !(first && std::isalpha(static_cast<unsigned char>(p_.Peek())))) break;
    if (!std::isalpha(static_cast<unsigned char>(p_.Peek()))) {
      p_.pos_ = before;
      break;
    }
    const size_t kw_pos = p_.pos_;
    KILN_ASSIGN_OR_RETURN(std::string keyword, p_.ParseBareId("a keyword"));
    if (p_.Peek() != '=') {
      if (short_name == "compare" && comma) {  // trailing comparison type
        props_.push_back({"compare_type", ir::Attr::Enum(std::move(keyword))});
        first = false;
        continue;
      }
      p_.pos_ = kw_pos;
      if (comma) return p_.Error("expected 'keyword = value'");
      break;
    }
    KILN_RETURN_IF_ERROR(Keyword(short_name, keyword));
    first = false;
  }
  if (!dot_dims_.dict.empty() || short_name == "dot_general") {
    for (const char* f : {"lhs_batching_dimensions", "rhs_batching_dimensions",
                          "lhs_contracting_dimensions", "rhs_contracting_dimensions"}) {
      if (dot_dims_.Find(f) == nullptr) dot_dims_.dict.emplace_back(f, ir::Attr::IntArray({}));
    }
    props_.push_back({"dot_dimension_numbers", dot_dims_});
  }
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(Types(short_name));
  return Finish(std::move(dict));
}

}  // namespace kiln::ingest::text
