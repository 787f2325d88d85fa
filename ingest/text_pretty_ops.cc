// The custom (pretty) forms of the stablehlo and func ops, as StableHLO's and MLIR's printers
// write them (stablehlo/dialect/StablehloOps.td assemblyFormat, AssemblyFormat.cpp). Most follow
// one pattern, handled by one routine:
//   [head] %operand, ..., keyword = value, ... [{attr-dict}] : types
// where the head is op-specific (`compare GT,`, `custom_call @target(...)`, `convolution(...)`),
// keywords map onto the op's attributes, and `types` is a single type (operands and results
// alike), a type list, or a function type. reduce and while have their own layouts.
#include <cctype>
#include <unordered_map>

#include "ingest/text_parser.h"

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

}  // namespace

class PrettyOps {
 public:
  PrettyOps(Parser& p, ir::Op& op, std::vector<ir::Type>& result_types, std::string_view parent,
            int depth)
      : p_(p), op_(op), results_(result_types), parent_(parent), depth_(depth) {}

  Status Common(std::string_view short_name);
  Status Reduce();
  Status While();
  Status Call();
  Status Chlo();
  Status Sdy(std::string_view short_name);

 private:
  Status Keyword(std::string_view short_name, const std::string& keyword);
  Status SliceRanges();
  Status Window();
  Status DotDims(const std::string& keyword);
  Status Types(std::string_view short_name);
  Status Finish(AttrList dict) {
    return ToVhloForm(op_, std::move(props_), std::move(dict), *p_.module_);
  }
  StatusOr<ir::Attr> IntListAttr() {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, p_.ParseIntListBrackets());
    return I64Tensor(v);
  }

  Parser& p_;
  ir::Op& op_;
  std::vector<ir::Type>& results_;
  std::string_view parent_;
  int depth_;
  AttrList props_;
  ir::Attr dot_dims_ = ir::Attr::Dict({});
};

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

Status PrettyOps::Reduce() {
  // (%in init: %init), ... [applies op] across dimensions = [...] [{attrs}] : functype
  //   [reducer(%a: T, %b: T) ... { body }]
  std::vector<ir::ValueId> inputs, inits;
  do {
    KILN_RETURN_IF_ERROR(p_.Expect('(', "to open a reduce operand"));
    KILN_ASSIGN_OR_RETURN(ir::ValueId in, p_.ParseValueUse());
    KILN_RETURN_IF_ERROR(p_.ExpectKeyword("init"));
    KILN_RETURN_IF_ERROR(p_.Expect(':', "after 'init'"));
    KILN_ASSIGN_OR_RETURN(ir::ValueId init, p_.ParseValueUse());
    KILN_RETURN_IF_ERROR(p_.Expect(')', "to close a reduce operand"));
    inputs.push_back(in);
    inits.push_back(init);
  } while (p_.Consume(','));
  op_.operands = inputs;
  op_.operands.insert(op_.operands.end(), inits.begin(), inits.end());
  std::string applies;
  if (p_.ConsumeKeyword("applies")) {
    if (p_.Peek() == '"') {
      KILN_ASSIGN_OR_RETURN(applies, p_.ParseStringLiteral());
    } else {
      KILN_ASSIGN_OR_RETURN(applies, p_.ParseBareId("the reducing operation"));
    }
  }
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("across"));
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("dimensions"));
  KILN_RETURN_IF_ERROR(p_.Expect('=', "after 'dimensions'"));
  KILN_ASSIGN_OR_RETURN(ir::Attr dims, IntListAttr());
  props_.push_back({"dimensions", std::move(dims)});
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of stablehlo.reduce"));
  std::vector<ir::Type> in_types;
  KILN_RETURN_IF_ERROR(p_.ParseFunctionType(in_types, results_));
  if (in_types.size() != op_.operands.size()) {
    return p_.Error("stablehlo.reduce has " + std::to_string(op_.operands.size()) +
                    " operands but " + std::to_string(in_types.size()) + " operand types");
  }
  ir::Region& region = op_.regions.emplace_back();
  if (!applies.empty()) {
    const ir::Module& m = *p_.module_;
    const ir::Type scalar = ir::Type::Tensor(m.type_of(inputs[0]).dtype, {});
    ir::Block& block = region.blocks.emplace_back();
    const ir::ValueId lhs = p_.module_->AddValue(scalar);
    const ir::ValueId rhs = p_.module_->AddValue(scalar);
    block.args = {lhs, rhs};
    ir::Op inner;
    inner.name = applies;
    inner.operands = {lhs, rhs};
    inner.results = {p_.module_->AddValue(scalar)};
    KILN_RETURN_IF_ERROR(ToVhloForm(inner, {}, {}, *p_.module_));
    ir::Op ret;
    ret.name = "stablehlo.return";
    ret.operands = inner.results;
    block.ops.push_back(std::move(inner));
    block.ops.push_back(std::move(ret));
    p_.synthesized_body_ = true;
  } else {
    KILN_RETURN_IF_ERROR(p_.ExpectKeyword("reducer"));
    std::vector<std::pair<std::string, ir::Type>> firsts, seconds;
    while (p_.Peek() == '(') {
      std::vector<std::pair<std::string, ir::Type>> pair;
      KILN_RETURN_IF_ERROR(p_.ParseBlockArgList(pair));
      if (pair.size() != 2) return p_.Error("reducer arguments come in pairs");
      firsts.push_back(std::move(pair[0]));
      seconds.push_back(std::move(pair[1]));
    }
    firsts.insert(firsts.end(), seconds.begin(), seconds.end());
    KILN_RETURN_IF_ERROR(p_.ParseRegion(region, "stablehlo.reduce", depth_ + 1, &firsts));
  }
  return Finish(std::move(dict));
}

Status PrettyOps::While() {
  KILN_RETURN_IF_ERROR(p_.Expect('(', "after stablehlo.while"));
  std::vector<std::string> names;
  if (!p_.Consume(')')) {
    do {
      KILN_RETURN_IF_ERROR(p_.Expect('%', "before a loop variable"));
      KILN_ASSIGN_OR_RETURN(std::string name, p_.ParseBareId("a loop variable name"));
      KILN_RETURN_IF_ERROR(p_.Expect('=', "after a loop variable"));
      KILN_ASSIGN_OR_RETURN(ir::ValueId init, p_.ParseValueUse());
      names.push_back(std::move(name));
      op_.operands.push_back(init);
    } while (p_.Consume(','));
    KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the loop variables"));
    KILN_RETURN_IF_ERROR(p_.Expect(':', "before the loop variables' types"));
    do {
      KILN_ASSIGN_OR_RETURN(ir::Type t, p_.ParseType());
      results_.push_back(std::move(t));
    } while (p_.Consume(','));
  }
  if (results_.size() != names.size()) {
    return p_.Error("stablehlo.while has " + std::to_string(names.size()) + " loop variables but " +
                    std::to_string(results_.size()) + " types");
  }
  AttrList dict;
  if (p_.ConsumeKeyword("attributes")) KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  std::vector<std::pair<std::string, ir::Type>> args;
  for (size_t i = 0; i < names.size(); ++i) args.emplace_back(names[i], results_[i]);
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("cond"));
  KILN_RETURN_IF_ERROR(
      p_.ParseRegion(op_.regions.emplace_back(), "stablehlo.while", depth_ + 1, &args));
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("do"));
  KILN_RETURN_IF_ERROR(
      p_.ParseRegion(op_.regions.emplace_back(), "stablehlo.while", depth_ + 1, &args));
  return Finish(std::move(dict));
}

Status PrettyOps::Call() {
  KILN_ASSIGN_OR_RETURN(std::string callee, p_.ParseSymbolName());
  props_.push_back({"callee", ir::Attr::SymbolRef(std::move(callee))});
  KILN_RETURN_IF_ERROR(p_.Expect('(', "to open the call's arguments"));
  KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
  KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the call's arguments"));
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the call's type"));
  std::vector<ir::Type> inputs;
  KILN_RETURN_IF_ERROR(p_.ParseFunctionType(inputs, results_));
  return Finish(std::move(dict));
}

// CHLO ops (chlo.erf, chlo.top_k, ...): JAX's text keeps them, its bytecode path decomposes
// them into StableHLO. Read as foreign ops, so the compiler names them: `op %x [, %y] {attrs} :
// types [-> results]`, or `op(%x, k = 3) : type -> (types)`.
Status PrettyOps::Chlo() {
  const bool parenthesized = p_.Consume('(');
  KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
  while (p_.Consume(',')) {
    KILN_ASSIGN_OR_RETURN(std::string key, p_.ParseBareId("an attribute name"));
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after " + key));
    KILN_ASSIGN_OR_RETURN(ir::Attr value, p_.ParseAttr());
    props_.push_back({key, std::move(value)});
  }
  if (parenthesized) KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the operands"));
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  for (ir::NamedAttr& a : props_) dict.push_back(std::move(a));
  props_.clear();
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the types of " + op_.name));
  std::vector<ir::Type> types;
  if (p_.Peek() == '(') {
    KILN_ASSIGN_OR_RETURN(types, p_.ParseTypeListParens());
  } else {
    do {
      KILN_ASSIGN_OR_RETURN(ir::Type t, p_.ParseType());
      types.push_back(std::move(t));
    } while (p_.Consume(','));
  }
  if (p_.ConsumeStr("->")) {
    KILN_ASSIGN_OR_RETURN(results_, p_.ParseResultTypes());
  } else if (!types.empty()) {
    results_ = {types.back()};
  }
  return Finish(std::move(dict));
}

// The Shardy ops JAX prints at the top of every module and around sharded values:
//   sdy.mesh @name = <["x"=2]> {attrs}
//   sdy.sharding_constraint %v <@mesh, [{"x"}, {}]> : type   (sdy.reshard alike)
Status PrettyOps::Sdy(std::string_view short_name) {
  AttrList dict;
  if (short_name == "return") {  // sdy.return %a, %b : ta, tb
    KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    if (!op_.operands.empty()) {
      KILN_RETURN_IF_ERROR(p_.Expect(':', "before the types of sdy.return"));
      do {
        KILN_RETURN_IF_ERROR(p_.ParseType().status());
      } while (p_.Consume(','));
    }
    return Finish(std::move(dict));
  }
  if (short_name == "manual_computation") {
    // (%operands) in_shardings=[<...>, ...] out_shardings=[...] manual_axes={"x"}
    //   (%arg: T, ...) { body } : (ins) -> outs
    KILN_RETURN_IF_ERROR(p_.Expect('(', "to open the operands of sdy.manual_computation"));
    KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
    KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the operands of sdy.manual_computation"));
    for (const char* key : {"in_shardings", "out_shardings"}) {
      KILN_RETURN_IF_ERROR(p_.ExpectKeyword(key));
      KILN_RETURN_IF_ERROR(p_.Expect('=', std::string("after ") + key));
      KILN_RETURN_IF_ERROR(p_.Expect('[', std::string("to open ") + key));
      std::vector<ir::Attr> shardings;
      if (!p_.Consume(']')) {
        do {
          KILN_ASSIGN_OR_RETURN(ir::Attr sharding, p_.ParseSdySharding());
          shardings.push_back(std::move(sharding));
        } while (p_.Consume(','));
        KILN_RETURN_IF_ERROR(p_.Expect(']', std::string("to close ") + key));
      }
      props_.push_back(
          {key, ir::Attr::Dict({{"sdy", ir::Attr::String("sharding_per_value")},
                                {"shardings", ir::Attr::Array(std::move(shardings))}})});
    }
    KILN_RETURN_IF_ERROR(p_.ExpectKeyword("manual_axes"));
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after manual_axes"));
    KILN_ASSIGN_OR_RETURN(ir::Attr axes, p_.ParseSdyAxisList());
    std::vector<ir::Attr> names;
    for (const ir::Attr& axis : axes.array) {
      const ir::Attr* name = axis.Find("name");
      if (name != nullptr) names.push_back(*name);
    }
    props_.push_back(
        {"manual_axes", ir::Attr::Dict({{"sdy", ir::Attr::String("manual_axes")},
                                        {"axes", ir::Attr::Array(std::move(names))}})});
    std::vector<std::pair<std::string, ir::Type>> args;
    KILN_RETURN_IF_ERROR(p_.ParseBlockArgList(args));
    KILN_RETURN_IF_ERROR(
        p_.ParseRegion(op_.regions.emplace_back(), "sdy.manual_computation", depth_ + 1, &args));
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of sdy.manual_computation"));
    std::vector<ir::Type> inputs;
    KILN_RETURN_IF_ERROR(p_.ParseFunctionType(inputs, results_));
    return Finish(std::move(dict));
  }
  if (short_name == "mesh") {
    KILN_ASSIGN_OR_RETURN(std::string name, p_.ParseSymbolName());
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after the mesh name"));
    KILN_ASSIGN_OR_RETURN(ir::Attr mesh, p_.ParseSdyAttr("mesh"));
    props_.push_back({"mesh", std::move(mesh)});
    props_.push_back({"sym_name", ir::Attr::String(std::move(name))});
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    return Finish(std::move(dict));
  }
  KILN_ASSIGN_OR_RETURN(ir::ValueId v, p_.ParseValueUse());
  op_.operands = {v};
  KILN_ASSIGN_OR_RETURN(ir::Attr sharding, p_.ParseSdySharding());
  props_.push_back({"sharding", std::move(sharding)});
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of " + op_.name));
  KILN_ASSIGN_OR_RETURN(ir::Type type, p_.ParseType());
  results_ = {std::move(type)};
  return Finish(std::move(dict));
}

Status Parser::ParsePrettyOp(const std::string& name, ir::Op& op,
                             std::vector<ir::Type>& result_types, std::string_view parent,
                             int depth, bool& handled) {
  handled = true;
  PrettyOps pretty(*this, op, result_types, parent, depth);
  if (name == "call" || name == "func.call") {
    op.name = "func.call";
    return pretty.Call();
  }
  if (name == "return" || name == "func.return") {
    op.name = "func.return";
    return pretty.Common("return");
  }
  if (name == "sdy.mesh" || name == "sdy.sharding_constraint" || name == "sdy.reshard" ||
      name == "sdy.manual_computation" || name == "sdy.return") {
    op.name = name;
    return pretty.Sdy(std::string_view(name).substr(4));
  }
  if (name.rfind("chlo.", 0) == 0) {
    op.name = name;
    return pretty.Chlo();
  }
  if (name.rfind("stablehlo.", 0) != 0) {
    handled = false;
    return Status::Ok();
  }
  op.name = name;
  const std::string_view short_name = std::string_view(name).substr(10);
  if (short_name == "reduce") return pretty.Reduce();
  if (short_name == "while") return pretty.While();
  if (HasCommonForm(short_name)) return pretty.Common(short_name);
  handled = false;
  return Status::Ok();
}

}  // namespace kiln::ingest::text
