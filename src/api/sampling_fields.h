// SamplingParams from a JSON request, field by field, under the names of
// docs/API.md: shared by `vllm-cpp generate --input` and the server.
#pragma once

#include <optional>
#include <string>

#include "api/structured_output_fields.h"
#include "base/json.h"
#include "base/status.h"
#include "engine/sample/sampling_params.h"

namespace vllm::api {

// Fields that are not SamplingParams members but decide some: best_of (null
// or n) and beam_width (another name for n under beam search).
struct SamplingFieldExtras {
  std::optional<int64_t> best_of;
  std::optional<int32_t> beam_width;
  bool n_given = false;
  StructuredOutputFields structured_outputs;
};

// Reads `key` into `params` if it names a sampling field: true if it did,
// false if `key` is not one; an error naming the field for a wrong type.
Result<bool> read_sampling_field(SamplingParams& params, SamplingFieldExtras& extras, const std::string& key,
                                 const Json& value);

// Applies the extras once every field has been read.
Status apply_sampling_extras(SamplingParams& params, const SamplingFieldExtras& extras);

}  // namespace vllm::api
