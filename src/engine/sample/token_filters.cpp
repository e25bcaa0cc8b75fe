#include "engine/sample/token_filters.h"

#include <algorithm>
#include <cmath>

namespace vllm {
namespace {

constexpr double kMinTemperature = 0.01;  // API.md: (0, 0.01) is raised to 0.01

void normalise(std::vector<Candidate>& c) {
  double total = 0.0;
  for (const Candidate& x : c) total += x.prob;
  for (Candidate& x : c) x.prob /= total;
}

// Keeps the tokens whose logit is at least the k-th largest (ties all stay, as in vLLM).
float top_k_threshold(const float* logits, int32_t vocab_size, int32_t k, std::vector<Candidate>& scratch) {
  scratch.resize(static_cast<size_t>(vocab_size));
  for (int32_t i = 0; i < vocab_size; ++i) scratch[static_cast<size_t>(i)].prob = logits[i];
  auto kth = scratch.begin() + (k - 1);
  std::nth_element(scratch.begin(), kth, scratch.end(),
                   [](const Candidate& a, const Candidate& b) { return a.prob > b.prob; });
  return static_cast<float>(kth->prob);
}

// Keeps, most likely first, every token that the more likely ones before it
// do not already cover with top_p of the probability.
void apply_top_p(std::vector<Candidate>& c, double top_p) {
  // A token below (1 - top_p) / (n + 1) can never be kept: even with every
  // less likely token, the ones above it already hold more than top_p.
  // Dropping them first spares sorting most of the vocabulary.
  const double never_kept = (1.0 - top_p) / static_cast<double>(c.size() + 1);
  std::erase_if(c, [never_kept](const Candidate& x) { return x.prob < never_kept; });
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    return a.prob > b.prob || (a.prob == b.prob && a.token_id < b.token_id);
  });
  double mass_above = 0.0;
  size_t keep = 0;
  while (keep < c.size() && mass_above < top_p) mass_above += c[keep++].prob;
  c.resize(std::max<size_t>(keep, 1));
  normalise(c);
}

void apply_min_p(std::vector<Candidate>& c, double min_p) {
  double max_prob = 0.0;
  for (const Candidate& x : c) max_prob = std::max(max_prob, x.prob);
  const double floor = min_p * max_prob;
  std::erase_if(c, [floor](const Candidate& x) { return x.prob < floor; });
  normalise(c);
}

}  // namespace

void sampling_distribution(const float* logits, int32_t vocab_size, const SamplingParams& params,
                           std::vector<Candidate>& out) {
  const double temperature = std::max(params.temperature, kMinTemperature);
  float threshold = -INFINITY;
  if (params.top_k > 0 && params.top_k < vocab_size) threshold = top_k_threshold(logits, vocab_size, params.top_k, out);
  const float max_logit = *std::max_element(logits, logits + vocab_size);
  out.clear();
  for (int32_t i = 0; i < vocab_size; ++i) {
    if (logits[i] < threshold || std::isinf(logits[i])) continue;
    const double p = std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
    if (p > 0.0) out.push_back({i, p});
  }
  if (out.empty()) {  // every logit masked: nothing better than the argmax is left
    out.push_back({static_cast<int32_t>(std::max_element(logits, logits + vocab_size) - logits), 1.0});
    return;
  }
  normalise(out);
  if (params.top_p < 1.0) apply_top_p(out, params.top_p);
  if (params.min_p > 0.0) apply_min_p(out, params.min_p);
}

int32_t draw_token(const std::vector<Candidate>& candidates, double u) {
  double cumulative = 0.0;
  for (const Candidate& c : candidates) {
    cumulative += c.prob;
    if (u < cumulative) return c.token_id;
  }
  return candidates.back().token_id;  // rounding left u just above the total
}

int32_t draw_recovered_token(const std::vector<Candidate>& p, const float* q, int32_t draft, double u) {
  // Tokens outside p's candidates have p = 0, so their residual is 0 too.
  auto residual = [&](const Candidate& c) {
    const double q_token = q != nullptr ? static_cast<double>(q[c.token_id]) : (c.token_id == draft ? 1.0 : 0.0);
    return std::max(0.0, c.prob - q_token);
  };
  double total = 0.0;
  for (const Candidate& c : p) total += residual(c);
  if (!(total > 0.0)) return draw_token(p, u);
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = p.front().token_id;
  for (const Candidate& c : p) {
    const double r = residual(c);
    if (r <= 0.0) continue;
    cumulative += r;
    last_positive = c.token_id;
    if (target < cumulative) return c.token_id;
  }
  return last_positive;  // rounding left the target just above the total
}

}  // namespace vllm
