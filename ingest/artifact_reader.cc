// ReadPortableArtifact: checks that the bytes are a StableHLO portable artifact this reader can
// handle, then runs the pieces in order: container tables, then the IR walk, which decodes
// attributes, types and locations on demand.
#include "ingest/artifact_reader.h"

#include <charconv>
#include <string>

#include "ingest/attr_type_decoder.h"
#include "ingest/bytecode_container.h"
#include "ingest/ir_builder.h"
#include "ingest/locations.h"
#include "ingest/op_translation.h"

namespace kiln::ingest {
namespace {

constexpr std::string_view kProducerPrefix = "StableHLO_v";

bool ParseNumber(std::string_view& text, int& out) {
  const char* end = text.data() + text.size();
  auto [next, error] = std::from_chars(text.data(), end, out);
  if (error != std::errc() || out < 0) return false;
  text.remove_prefix(static_cast<size_t>(next - text.data()));
  return true;
}

// "StableHLO_v1.16.3" -> {1, 16, 3}. serializePortableArtifact always writes this form.
bool ParseProducer(std::string_view producer, VhloVersion& version) {
  if (producer.substr(0, kProducerPrefix.size()) != kProducerPrefix) return false;
  std::string_view rest = producer.substr(kProducerPrefix.size());
  if (!ParseNumber(rest, version.major) || rest.empty() || rest[0] != '.') return false;
  rest.remove_prefix(1);
  if (!ParseNumber(rest, version.minor) || rest.empty() || rest[0] != '.') return false;
  rest.remove_prefix(1);
  return ParseNumber(rest, version.patch) && rest.empty();
}

bool Older(const VhloVersion& a, const VhloVersion& b) {
  if (a.major != b.major) return a.major < b.major;
  if (a.minor != b.minor) return a.minor < b.minor;
  return a.patch < b.patch;
}

std::string ToString(const VhloVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

}  // namespace

ReadLimits ReadLimits::ForInput(size_t input_bytes) {
  ReadLimits limits;
  limits.max_literal_bytes += input_bytes;
  limits.max_total_attr_bytes += 4 * static_cast<uint64_t>(input_bytes);
  return limits;
}

StatusOr<ir::Module> ReadPortableArtifact(std::span<const uint8_t> bytes) {
  return ReadPortableArtifact(bytes, ReadLimits::ForInput(bytes.size()));
}

StatusOr<ir::Module> ReadPortableArtifact(std::span<const uint8_t> bytes,
                                          const ReadLimits& limits) {
  KILN_ASSIGN_OR_RETURN(Container container, ParseContainer(bytes));

  VhloVersion version{};
  if (!ParseProducer(container.producer, version)) {
    return InvalidArgument("the program's producer is '" + std::string(container.producer) +
                           "', not 'StableHLO_vX.Y.Z': only StableHLO portable artifacts are "
                           "accepted");
  }
  if (Older(version, kMinimumReadableVersion)) {
    return InvalidArgument("the artifact targets StableHLO " + ToString(version) +
                           ", older than the oldest version Kiln reads (" +
                           ToString(kMinimumReadableVersion) + ")");
  }

  // Versions newer than kCurrentReadableVersion are still attempted: only the ops they use matter,
  // and an op this reader does not know produces a precise error.
  ir::Module module;
  module.producer = std::string(container.producer);
  module.version_major = version.major;
  module.version_minor = version.minor;
  module.version_patch = version.patch;

  AttrTypeDecoder decoder(container, limits);
  LocationTable locations(container, module.locations);
  OpTranslator translator(decoder, container.producer);
  KILN_RETURN_IF_ERROR(BuildModule(container, decoder, locations, translator, module),
                       "reading " + module.producer + " artifact (MLIR bytecode v" +
                           std::to_string(container.version) + ")");
  return module;
}

}  // namespace kiln::ingest
