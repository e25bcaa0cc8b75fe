#include "cli/step_budget.h"

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/logging.h"
#include "engine/llm_engine.h"

namespace vllm::cli {
namespace {

constexpr int32_t kMaxBudget = 2048;
constexpr int32_t kProbeTokens = 64;

// Seconds to prefill `num_tokens` (one step: the budget holds them all) and sample one token.
Result<double> time_prefill(LLMEngine& engine, int32_t num_tokens, int64_t vocab_size, int32_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(num_tokens));
  for (int32_t i = 0; i < num_tokens; ++i)
    ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + seed) % vocab_size);
  SamplingParams params;
  params.temperature = 0;
  params.max_tokens = 1;
  params.ignore_eos = true;
  const double start = now_seconds();
  VLLM_RETURN_IF_ERROR(engine.generate({PromptInput::from_token_ids(std::move(ids))}, {params}).status());
  return now_seconds() - start;
}

}  // namespace

Result<int32_t> measure_step_token_budget(Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
                                          double target_step_seconds) {
  const int32_t context = static_cast<int32_t>(std::min<int64_t>(model.config().max_context_length(), kMaxBudget));
  EngineConfig probe = config;
  probe.scheduler.max_model_len = context;
  probe.scheduler.max_num_batched_tokens = context;
  probe.scheduler.max_num_seqs = 1;
  probe.cache.enable_prefix_caching = false;  // every probe computes all of its tokens
  probe.cache.kv_cache_memory_bytes = 0;
  VLLM_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine, LLMEngine::create(model, tokenizer, probe));
  const int64_t vocab = model.config().vocab_size;
  const int32_t small = std::min(kProbeTokens, context - 1);
  // The first run pays for first touches (KV pages, thread wake-ups); the
  // second gives a first rate; where the budget is much larger than that
  // probe, the rate is taken again at about the budget's size (the matrix
  // products run more efficiently there, attention costs more), the best of
  // three: the machine is shared, and its capacity is the fastest run.
  VLLM_RETURN_IF_ERROR(time_prefill(*engine, small, vocab, 1).status());
  VLLM_ASSIGN_OR_RETURN(double seconds, time_prefill(*engine, small, vocab, 2));
  double tokens_per_second = small / seconds;
  const auto estimate =
      static_cast<int32_t>(std::clamp(tokens_per_second * target_step_seconds, 1.0, double(context - 1)));
  if (estimate > 2 * small) {
    for (int32_t run = 0; run < 3; ++run) {
      VLLM_ASSIGN_OR_RETURN(seconds, time_prefill(*engine, estimate, vocab, 3 + run));
      tokens_per_second = std::max(run == 0 ? 0.0 : tokens_per_second, estimate / seconds);
    }
  }
  const int32_t lowest = std::min(config.scheduler.max_num_seqs, kMaxBudget);
  const auto budget = static_cast<int32_t>(
      std::clamp(std::lround(tokens_per_second * target_step_seconds), static_cast<long>(lowest), long{kMaxBudget}));
  VLLM_LOG(Info) << "prefill measured at " << static_cast<int64_t>(tokens_per_second)
                 << " tokens/s: a step's budget is " << budget << " tokens (--max-num-batched-tokens to set it)";
  return budget;
}

}  // namespace vllm::cli
