#include "engine/spec/proposer.h"

#include "engine/spec/ngram_proposer.h"

namespace vllm {

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
  switch (config.method) {
    case SpeculativeMethod::kNgram:
      return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
  }
  return nullptr;
}

}  // namespace vllm
