// PrettyOps: the parser of the custom (pretty) forms of the stablehlo, func, chlo and sdy ops,
// over Parser's scanning (text_pretty_ops.cc: the common form; text_region_ops.cc: the forms with
// regions and of other dialects).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {

// Ops whose custom form PrettyOps::Common reads (`stablehlo.` stripped: "add", "slice", ...).
bool HasCommonForm(std::string_view op);

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

}  // namespace kiln::ingest::text
