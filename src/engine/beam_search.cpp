#include "engine/beam_search.h"

#include <algorithm>
#include <cmath>

#include "structured/grammar_matcher.h"

namespace vllm {

BeamSearch::BeamSearch(std::vector<int32_t> prompt_token_ids, const SamplingParams& params,
                       std::vector<int32_t> eos_token_ids)
    : prompt_(std::move(prompt_token_ids)),
      params_(params),
      eos_token_ids_(std::move(eos_token_ids)),
      width_(static_cast<size_t>(params.n)),
      beams_(1),
      results_(1) {}

bool BeamSearch::is_eos(int32_t id) const { return std::ranges::find(eos_token_ids_, id) != eos_token_ids_.end(); }

double BeamSearch::score(const Beam& beam) const {
  const double length = static_cast<double>(prompt_.size() + beam.token_ids.size() - (beam.ended_with_eos ? 1 : 0));
  return beam.cumulative_logprob / std::pow(length, params_.length_penalty);
}

std::vector<std::vector<int32_t>> BeamSearch::round_prompts() const {
  std::vector<std::vector<int32_t>> prompts;
  for (const Beam& b : beams_) {
    std::vector<int32_t> p = prompt_;
    p.insert(p.end(), b.token_ids.begin(), b.token_ids.end());
    prompts.push_back(std::move(p));
  }
  return prompts;
}

bool BeamSearch::completes_grammar(const Beam& beam) const {
  if (!params_.grammar) return false;
  structured::GrammarMatcher matcher(params_.grammar);
  for (int32_t id : beam.token_ids) matcher.accept_token(id);
  return matcher.is_terminated();
}

SamplingParams BeamSearch::round_params(size_t beam) const {
  SamplingParams p;
  if (params_.grammar) {
    p.grammar = params_.grammar;
    const auto length = static_cast<int64_t>(beams_[beam].token_ids.size());
    p.grammar_resume = SamplingParams::GrammarResume{length, params_.max_tokens - length};
  }
  p.temperature = 0.0;
  p.max_tokens = 1;
  p.ignore_eos = true;  // the search decides what EOS means
  p.logprobs = static_cast<int32_t>(2 * width_);
  p.output_kind = OutputKind::kFinalOnly;
  return p;
}

void BeamSearch::add_result(size_t beam, const PositionLogprobs& next) {
  results_[beam] = next.top;
  ++num_results_;
}

bool BeamSearch::next_round() {
  std::vector<Beam> candidates;
  for (size_t b = 0; b < beams_.size(); ++b) {
    for (const TokenLogprob& t : results_[b]) {
      if (std::isinf(t.logprob)) continue;  // a token the grammar forbids
      Beam extended = beams_[b];
      extended.token_ids.push_back(t.token_id);
      extended.cumulative_logprob += t.logprob;
      extended.ended_with_eos = !params_.ignore_eos && is_eos(t.token_id);
      extended.grammar_complete = !extended.ended_with_eos && completes_grammar(extended);
      const bool complete = extended.ended_with_eos || extended.grammar_complete;
      (complete ? completed_ : candidates).push_back(std::move(extended));
    }
  }
  // Stable: equal scores keep the order of their parents and of the tokens' ranks.
  std::ranges::stable_sort(candidates, [this](const Beam& a, const Beam& b) { return score(a) > score(b); });
  if (candidates.size() > width_) candidates.resize(width_);
  beams_ = std::move(candidates);
  ++round_;
  results_.assign(beams_.size(), {});
  num_results_ = 0;
  return round_ < params_.max_tokens && !beams_.empty();
}

std::vector<Beam> BeamSearch::best() const {
  std::vector<Beam> all = completed_;
  all.insert(all.end(), beams_.begin(), beams_.end());
  std::ranges::stable_sort(all, [this](const Beam& a, const Beam& b) { return score(a) > score(b); });
  if (all.size() > width_) all.resize(width_);
  return all;
}

}  // namespace vllm
