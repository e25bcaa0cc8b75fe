#include "engine/spec/proposer.h"

#include "engine/spec/draft_model_proposer.h"
#include "engine/spec/eagle_proposer.h"
#include "engine/spec/ngram_proposer.h"

namespace vllm {

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, const DraftModelResources& draft) {
  switch (config.method) {
    case SpeculativeMethod::kNgram:
      return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
    case SpeculativeMethod::kDraftModel:
      return std::make_unique<DraftModelProposer>(*draft.model, *draft.pool, draft.kv_shape, draft.num_blocks,
                                                  draft.resident);
    case SpeculativeMethod::kEagle:
    case SpeculativeMethod::kEagle3:
      return std::make_unique<EagleProposer>(*draft.model, *draft.pool, draft.kv_shape, draft.num_blocks,
                                             draft.resident, draft.target_hidden_width);
  }
  return nullptr;
}

}  // namespace vllm
