#include "engine/sample/logits_processors.h"

#include <algorithm>
#include <limits>

namespace vllm {
namespace {

constexpr double kMaxAbsBias = 100.0;  // API.md: biases are clamped to [-100, 100]

bool in_vocab(int32_t id, int32_t vocab_size) { return id >= 0 && id < vocab_size; }

}  // namespace

void apply_logit_bias(float* logits, int32_t vocab_size, const SamplingParams& params) {
  for (const auto& [id, bias] : params.logit_bias) {
    if (in_vocab(id, vocab_size)) logits[id] += static_cast<float>(std::clamp(bias, -kMaxAbsBias, kMaxAbsBias));
  }
}

void apply_allowed_token_ids(float* logits, int32_t vocab_size, const SamplingParams& params,
                             std::vector<uint8_t>& scratch) {
  if (!params.allowed_token_ids) return;
  scratch.assign(static_cast<size_t>(vocab_size), 0);
  for (int32_t id : *params.allowed_token_ids) {
    if (in_vocab(id, vocab_size)) scratch[static_cast<size_t>(id)] = 1;
  }
  for (int32_t t = 0; t < vocab_size; ++t) {
    if (scratch[static_cast<size_t>(t)] == 0) logits[t] = -std::numeric_limits<float>::infinity();
  }
}

void apply_bad_words(float* logits, int32_t vocab_size, const SamplingParams& params,
                     std::span<const int32_t> output_token_ids) {
  for (const std::vector<int32_t>& word : params.bad_words_token_ids) {
    if (word.empty() || !in_vocab(word.back(), vocab_size)) continue;
    const size_t prefix = word.size() - 1;
    if (prefix > output_token_ids.size()) continue;
    if (std::equal(word.begin(), word.end() - 1, output_token_ids.end() - static_cast<std::ptrdiff_t>(prefix))) {
      logits[word.back()] = -std::numeric_limits<float>::infinity();
    }
  }
}

void apply_min_tokens(float* logits, int32_t vocab_size, const SamplingParams& params, int64_t num_output_tokens,
                      std::span<const int32_t> eos_token_ids) {
  if (num_output_tokens >= params.min_tokens) return;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (int32_t id : params.stop_token_ids) {
    if (in_vocab(id, vocab_size)) logits[id] = kMasked;
  }
  if (params.ignore_eos) return;
  for (int32_t id : eos_token_ids) {
    if (in_vocab(id, vocab_size)) logits[id] = kMasked;
  }
}

void apply_penalties(float* logits, int32_t vocab_size, const SamplingParams& params,
                     std::span<const int32_t> prompt_token_ids, std::span<const int32_t> output_token_ids,
                     PenaltyScratch& scratch) {
  const bool repetition = params.repetition_penalty != 1.0;
  const bool additive = params.frequency_penalty != 0.0 || params.presence_penalty != 0.0;
  if (!repetition && !additive) return;
  scratch.output_counts.resize(static_cast<size_t>(vocab_size), 0);
  scratch.seen.resize(static_cast<size_t>(vocab_size), 0);
  for (int32_t id : output_token_ids) {
    if (in_vocab(id, vocab_size)) ++scratch.output_counts[static_cast<size_t>(id)];
  }
  // Each distinct token once: `seen` marks the ones already rewritten.
  auto penalise = [&](int32_t id) {
    if (!in_vocab(id, vocab_size) || scratch.seen[static_cast<size_t>(id)] != 0) return;
    scratch.seen[static_cast<size_t>(id)] = 1;
    float& logit = logits[id];
    if (repetition) {
      const auto r = static_cast<float>(params.repetition_penalty);
      logit = logit > 0.0f ? logit / r : logit * r;
    }
    const int32_t count = scratch.output_counts[static_cast<size_t>(id)];
    if (count > 0) {
      logit -= static_cast<float>(params.frequency_penalty * count + params.presence_penalty);
    }
  };
  if (repetition) {
    for (int32_t id : prompt_token_ids) penalise(id);
  }
  for (int32_t id : output_token_ids) penalise(id);
  // Leave the scratch zeroed for the next row.
  for (auto ids : {prompt_token_ids, output_token_ids}) {
    for (int32_t id : ids) {
      if (!in_vocab(id, vocab_size)) continue;
      scratch.output_counts[static_cast<size_t>(id)] = 0;
      scratch.seen[static_cast<size_t>(id)] = 0;
    }
  }
}

}  // namespace vllm
