// The IR walk: reads the bytecode's IR section (ops, regions, blocks, SSA values) into an
// ir::Module, delegating each op's identity and attributes to the OpTranslator.
#pragma once

#include "ingest/attr_type_decoder.h"
#include "ingest/bytecode_container.h"
#include "ingest/locations.h"
#include "ingest/op_translation.h"
#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest {

// Reads `container.ir` into `module` (functions, top-level foreign ops, values, locations).
Status BuildModule(const Container& container, AttrTypeDecoder& decoder, LocationTable& locations,
                   OpTranslator& translator, ir::Module& module);

}  // namespace kiln::ingest
