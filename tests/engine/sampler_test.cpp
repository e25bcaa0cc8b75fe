// The sampler against independent arithmetic: distributions by chi-square
// over 20,000 seeded draws, penalties and biases against hand-computed
// logits, logprobs against a direct log-softmax.
#include "engine/sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/chi_square.h"

namespace vllm {
namespace {

using testing::chi_square;

// The toy model: 8 tokens with distinct logits.
const std::vector<float> kToyLogits = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -3.0f};
constexpr int kDraws = 20000;

// One row through the batched sampler, as the engine runs it.
SampledToken sample_once(std::vector<float> logits, const SamplingParams& params, RequestRng& rng,
                         std::vector<int32_t> prompt = {}, std::vector<int32_t> output = {}) {
  static ThreadPool pool(1);
  Sampler sampler(static_cast<int32_t>(logits.size()), {});
  const SamplingRow row{logits.data(), &params, prompt, output, &rng};
  return sampler.sample(std::span<const SamplingRow>(&row, 1), pool).front().front();
}

std::vector<int> draw_counts(const SamplingParams& params, uint64_t seed) {
  RequestRng rng(static_cast<int64_t>(seed));
  std::vector<int> counts(kToyLogits.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(sample_once(kToyLogits, params, rng).token_id)];
  return counts;
}

// softmax(logits / t), written out here rather than taken from the sampler.
std::vector<double> softmax(const std::vector<float>& logits, double t) {
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp(l / t));
  const double z = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= z;
  return p;
}

std::vector<double> renormalised(std::vector<double> p, const std::vector<bool>& keep) {
  for (size_t i = 0; i < p.size(); ++i) p[i] = keep[i] ? p[i] : 0.0;
  const double z = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= z;
  return p;
}

// The counts match `expected` (p > 0.001), and are far from `wrong`, so that
// the test could tell the filter missing.
void expect_distribution(const std::vector<int>& counts, const std::vector<double>& expected,
                         const std::vector<double>& wrong) {
  const testing::ChiSquare fit = chi_square(counts, expected);
  EXPECT_GT(fit.p_value, 1e-3) << "chi2 " << fit.statistic << " dof " << fit.degrees_of_freedom;
  EXPECT_LT(chi_square(counts, wrong).p_value, 1e-6);
}

TEST(ChiSquareTest, PValuesMatchKnownQuantiles) {
  // Chi-square quantiles: P(X > 16.266) = 0.001 for 3 dof, P(X > 3.841) = 0.05 for 1 dof.
  EXPECT_NEAR(testing::upper_incomplete_gamma(1.5, 16.266 / 2), 0.001, 1e-5);
  EXPECT_NEAR(testing::upper_incomplete_gamma(0.5, 3.841 / 2), 0.05, 1e-4);
  // 7 dof, x = 2, by the closed form for odd dof: 2(1 - Phi(sqrt 2)) + 2 phi(sqrt 2)(x^.5 + x^1.5/3 + x^2.5/15).
  EXPECT_NEAR(testing::upper_incomplete_gamma(3.5, 2.0 / 2), 0.95983, 1e-4);
}

TEST(SamplerDistributionTest, TemperatureScalesTheLogits) {
  SamplingParams p;
  p.temperature = 0.7;
  expect_distribution(draw_counts(p, 1), softmax(kToyLogits, 0.7), softmax(kToyLogits, 1.0));
}

TEST(SamplerDistributionTest, TopKKeepsTheKMostLikely) {
  SamplingParams p;
  p.top_k = 3;
  const std::vector<bool> keep = {true, true, true, false, false, false, false, false};
  expect_distribution(draw_counts(p, 2), renormalised(softmax(kToyLogits, 1.0), keep), softmax(kToyLogits, 1.0));
}

TEST(SamplerDistributionTest, TopPKeepsTheSmallestSetReachingP) {
  SamplingParams p;
  p.top_p = 0.75;
  // Probabilities 0.405 0.245 0.149 0.090 ...: the first two hold 0.650 < 0.75, so the third stays; three hold 0.799.
  const std::vector<double> full = softmax(kToyLogits, 1.0);
  std::vector<bool> keep(full.size(), false);
  double above = 0.0;
  for (size_t i = 0; i < full.size() && above < 0.75; ++i) {  // kToyLogits is sorted, most likely first
    keep[i] = true;
    above += full[i];
  }
  ASSERT_EQ(std::count(keep.begin(), keep.end(), true), 3);
  expect_distribution(draw_counts(p, 3), renormalised(full, keep), full);
}

TEST(SamplerDistributionTest, MinPDropsTokensBelowAFractionOfTheTopOne) {
  SamplingParams p;
  p.min_p = 0.3;
  const std::vector<double> full = softmax(kToyLogits, 1.0);
  std::vector<bool> keep;
  for (double x : full) keep.push_back(x >= 0.3 * full[0]);
  ASSERT_EQ(std::count(keep.begin(), keep.end(), true), 3);  // exp(-1) = 0.37 passes, exp(-1.5) = 0.22 does not
  expect_distribution(draw_counts(p, 4), renormalised(full, keep), full);
}

TEST(SamplerDistributionTest, FiltersCombineInOrderAfterTemperature) {
  SamplingParams p;
  p.temperature = 1.5;
  p.top_k = 6;
  p.top_p = 0.9;
  const std::vector<double> scaled = softmax(kToyLogits, 1.5);
  std::vector<bool> keep(8, false);
  for (size_t i = 0; i < 6; ++i) keep[i] = true;
  const std::vector<double> after_k = renormalised(scaled, keep);
  double above = 0.0;
  std::vector<bool> keep_p(8, false);
  for (size_t i = 0; i < 6 && above < 0.9; ++i) {
    keep_p[i] = true;
    above += after_k[i];
  }
  expect_distribution(draw_counts(p, 5), renormalised(after_k, keep_p), scaled);
}

TEST(SamplerTest, GreedyBreaksTiesTowardsLowestIdAndIgnoresTheFilters) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(greedy_token(logits.data(), 4), 1);
  SamplingParams p;
  p.temperature = 0.0;
  p.top_k = 1;
  p.min_p = 0.9;
  RequestRng rng(std::nullopt);
  EXPECT_EQ(sample_once(logits, p, rng).token_id, 1);
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const std::vector<float> logits(50, 0.0f);  // uniform over 50 tokens
  SamplingParams p;
  auto draw = [&](int64_t seed) {
    RequestRng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 20; ++i) out.push_back(sample_once(logits, p, rng).token_id);
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(SamplerTest, RowsOfABatchAreIndependentOfEachOther) {
  // The same seeded row gives the same token alone and among 31 others, on 2 threads.
  ThreadPool pool(2);
  const int32_t vocab = 64;
  std::vector<float> logits(32 * vocab);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplingParams random;
  random.top_p = 0.9;
  std::vector<RequestRng> rngs;
  for (int64_t r = 0; r < 32; ++r) rngs.emplace_back(r);
  std::vector<float> batch = logits;
  std::vector<SamplingRow> rows;
  for (size_t r = 0; r < 32; ++r) {
    rows.push_back({batch.data() + r * vocab, r % 2 == 0 ? &greedy : &random, {}, {}, &rngs[r]});
  }
  Sampler sampler(vocab, {});
  const std::vector<std::vector<SampledToken>> together = sampler.sample(rows, pool);
  for (size_t r = 0; r < 32; ++r) {
    std::vector<float> alone(logits.begin() + static_cast<ptrdiff_t>(r * vocab),
                             logits.begin() + static_cast<ptrdiff_t>((r + 1) * vocab));
    RequestRng rng(static_cast<int64_t>(r));
    ASSERT_EQ(together[r].size(), 1u);
    EXPECT_EQ(sample_once(alone, *rows[r].params, rng).token_id, together[r][0].token_id) << "row " << r;
  }
}

TEST(LogitsProcessorsTest, PenaltiesFollowTheirFormulas) {
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.frequency_penalty = 0.5;
  p.presence_penalty = 0.25;
  PenaltyScratch scratch;
  const std::vector<int32_t> prompt = {0, 1, 0};
  const std::vector<int32_t> output = {3, 3, 4};
  apply_penalties(logits.data(), 5, p, prompt, output, scratch);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);    // in the prompt, positive: 2 / 2
  EXPECT_FLOAT_EQ(logits[1], -2.0f);   // in the prompt, negative: -1 * 2
  EXPECT_FLOAT_EQ(logits[2], 0.5f);    // never seen
  EXPECT_FLOAT_EQ(logits[3], 0.25f);   // 3 / 2 - 0.5 * 2 - 0.25
  EXPECT_FLOAT_EQ(logits[4], -4.75f);  // -2 * 2 - 0.5 * 1 - 0.25
  // The scratch is left clean: the same call on fresh logits gives the same values.
  std::vector<float> again = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  apply_penalties(again.data(), 5, p, prompt, output, scratch);
  EXPECT_EQ(again, logits);
}

TEST(LogitsProcessorsTest, FrequencyAndPresenceIgnoreThePrompt) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.frequency_penalty = -1.0;  // negative values encourage repetition
  PenaltyScratch scratch;
  apply_penalties(logits.data(), 3, p, std::vector<int32_t>{0, 0}, std::vector<int32_t>{1, 1, 1}, scratch);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 4.0f, 1.0f}));
}

TEST(LogitsProcessorsTest, LogitBiasIsClampedAndMinTokensMasksStops) {
  std::vector<float> logits = {0.0f, 0.0f, 0.0f, 0.0f};
  SamplingParams p;
  p.logit_bias = {{1, 250.0}, {2, -3.5}};
  apply_logit_bias(logits.data(), 4, p);
  EXPECT_EQ(logits, (std::vector<float>{0.0f, 100.0f, -3.5f, 0.0f}));

  p.min_tokens = 2;
  p.stop_token_ids = {3};
  const std::vector<int32_t> eos = {0};
  std::vector<float> masked = {1.0f, 1.0f, 1.0f, 1.0f};
  apply_min_tokens(masked.data(), 4, p, 1, eos);
  EXPECT_TRUE(std::isinf(masked[0]) && std::isinf(masked[3]));
  EXPECT_EQ(masked[1], 1.0f);
  std::vector<float> open = {1.0f, 1.0f, 1.0f, 1.0f};
  apply_min_tokens(open.data(), 4, p, 2, eos);  // min_tokens reached
  EXPECT_EQ(open, (std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f}));
  p.ignore_eos = true;
  apply_min_tokens(masked.data(), 4, p, 0, std::vector<int32_t>{1});
  EXPECT_EQ(masked[1], 1.0f);  // EOS is not a stop when it is ignored
}

TEST(SamplerTest, BiasAndPenaltiesSteerTheChoiceButNotTheLogprobs) {
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{7, 10.0}};
  p.logprobs = 2;
  RequestRng rng(std::nullopt);
  const SampledToken t = sample_once(kToyLogits, p, rng);
  EXPECT_EQ(t.token_id, 7);
  // Reported from the raw logits: token 7 is the least likely of the eight.
  double z = 0;
  for (float l : kToyLogits) z += std::exp(l);
  EXPECT_NEAR(t.logprob, -3.0 - std::log(z), 1e-6);
  ASSERT_TRUE(t.logprobs.has_value());
  EXPECT_EQ(t.logprobs->chosen.rank, 8);
  ASSERT_EQ(t.logprobs->top.size(), 2u);
  EXPECT_EQ(t.logprobs->top[0].token_id, 0);
  EXPECT_EQ(t.logprobs->top[0].rank, 1);
  EXPECT_NEAR(t.logprobs->top[0].logprob, 2.0 - std::log(z), 1e-6);
  EXPECT_EQ(t.logprobs->top[1].token_id, 1);
}

TEST(LogprobsTest, TiesShareTheWorseRankAndListLowerIdsFirst) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f};
  const double z = log_sum_exp(logits.data(), 4);
  const PositionLogprobs p = position_logprobs(logits.data(), 4, z, 3, 3);
  EXPECT_EQ(p.chosen.token_id, 3);
  EXPECT_EQ(p.chosen.rank, 4);
  ASSERT_EQ(p.top.size(), 3u);
  EXPECT_EQ(p.top[0].token_id, 1);
  EXPECT_EQ(p.top[1].token_id, 2);
  EXPECT_EQ(p.top[0].rank, 2);
  EXPECT_EQ(p.top[2].token_id, 0);
  EXPECT_EQ(p.top[2].rank, 3);
  EXPECT_NEAR(z, std::log(std::exp(1.0) + 2 * std::exp(3.0) + 1.0), 1e-6);  // single-precision exponentials
}

TEST(LogitsProcessorsTest, AllowedTokenIdsLeaveOnlyThemToSample) {
  SamplingParams params;
  params.allowed_token_ids = std::vector<int32_t>{3, 6};
  RequestRng rng(5);
  std::vector<int> counts(kToyLogits.size(), 0);
  for (int i = 0; i < 2000; ++i) ++counts[static_cast<size_t>(sample_once(kToyLogits, params, rng).token_id)];
  EXPECT_EQ(counts[3] + counts[6], 2000);
  EXPECT_GT(counts[6], 0);  // both survive, in softmax proportion (e^0.5 : e^-1, about 4.5 : 1)
  EXPECT_GT(counts[3], counts[6]);
  params.temperature = 0.0;
  EXPECT_EQ(sample_once(kToyLogits, params, rng).token_id, 3);
}

TEST(LogitsProcessorsTest, BadWordsBanTheirLastTokenAfterTheRestOfThem) {
  SamplingParams params;
  params.temperature = 0.0;
  params.bad_words_token_ids = {{5, 0}, {2}};  // token 0 only after 5; token 2 always
  RequestRng rng(1);
  EXPECT_EQ(sample_once(kToyLogits, params, rng, {}, {7, 1}).token_id, 0);
  EXPECT_EQ(sample_once(kToyLogits, params, rng, {}, {7, 5}).token_id, 1);
  std::vector<float> logits = kToyLogits;
  logits[2] = 9.0f;  // the favourite, but banned everywhere
  EXPECT_EQ(sample_once(logits, params, rng, {}, {}).token_id, 0);
  EXPECT_EQ(sample_once(logits, params, rng, {5}, {}).token_id, 0);  // the prompt does not count
}

TEST(SamplingParamsTest, ValidationNamesTheFieldAndTheRange) {
  auto error = [](auto set) {
    SamplingParams p;
    set(p);
    return p.validate().message();
  };
  EXPECT_EQ(error([](SamplingParams& p) { p.temperature = -1; }), "temperature must be in [0, 2], got -1.");
  EXPECT_EQ(error([](SamplingParams& p) { p.max_tokens = 0; }), "max_tokens must be at least 1, got 0.");
  EXPECT_EQ(error([](SamplingParams& p) { p.top_p = 0; }), "top_p must be in (0, 1], got 0.");
  EXPECT_EQ(error([](SamplingParams& p) { p.top_k = -2; }),
            "top_k must be -1, 0 (both disable) or at least 1, got -2.");
  EXPECT_EQ(error([](SamplingParams& p) { p.min_p = 1.5; }), "min_p must be in [0, 1], got 1.5.");
  EXPECT_EQ(error([](SamplingParams& p) { p.allowed_token_ids = std::vector<int32_t>{}; }),
            "allowed_token_ids must not be empty.");
  EXPECT_EQ(error([](SamplingParams& p) { p.presence_penalty = 3; }), "presence_penalty must be in [-2, 2], got 3.");
  EXPECT_EQ(error([](SamplingParams& p) { p.frequency_penalty = -2.5; }),
            "frequency_penalty must be in [-2, 2], got -2.5.");
  EXPECT_EQ(error([](SamplingParams& p) { p.repetition_penalty = 0; }),
            "repetition_penalty must be greater than 0 and finite, got 0.");
  EXPECT_EQ(error([](SamplingParams& p) { p.n = 0; }), "n must be in [1, 16384], got 0.");
  EXPECT_EQ(error([](SamplingParams& p) { p.n = 2, p.temperature = 0; }),
            "n must be 1 when using greedy sampling (temperature 0), got 2.");
  EXPECT_EQ(error([](SamplingParams& p) { p.min_tokens = 20; }), "min_tokens (20) must be at most max_tokens (16).");
  EXPECT_EQ(error([](SamplingParams& p) { p.stop = {"a", ""}; }), "stop strings must not be empty.");
  EXPECT_EQ(error([](SamplingParams& p) { p.logprobs = -1; }), "logprobs must be at least 0, got -1.");
  EXPECT_EQ(error([](SamplingParams& p) { p.use_beam_search = true, p.stop = {"x"}; }),
            "stop is not supported with beam search.");
  EXPECT_TRUE(error([](SamplingParams& p) { p.use_beam_search = true, p.n = 4, p.temperature = 0; }).empty());
  // The field travels with the error, for the server's "param".
  SamplingParams p;
  p.min_p = 2;
  EXPECT_EQ(p.validate().param(), "min_p");
  p.min_p = 0;
  p.n = 3, p.temperature = 0;
  EXPECT_EQ(p.validate().param(), "n");
}

// Rejection sampling of draft tokens (speculative decoding).

// One sequence's rows (one per draft, then the bonus row) through the batched sampler.
std::vector<SampledToken> verify(std::vector<float> rows, const SamplingParams& params, RequestRng& rng,
                                 const std::vector<int32_t>& drafts, const std::vector<float>* q = nullptr,
                                 const std::vector<int32_t>& output = {}) {
  static ThreadPool pool(1);
  const auto vocab = static_cast<int32_t>(rows.size() / (drafts.size() + 1));
  Sampler sampler(vocab, {});
  const SamplingRow row{rows.data(), &params, {}, output, &rng, nullptr, drafts, q != nullptr ? q->data() : nullptr};
  return sampler.sample(std::span<const SamplingRow>(&row, 1), pool).front();
}

std::vector<int32_t> ids(const std::vector<SampledToken>& tokens) {
  std::vector<int32_t> out;
  for (const SampledToken& t : tokens) out.push_back(t.token_id);
  return out;
}

TEST(RejectionSamplerTest, GreedyAcceptsDraftsWhileTheyAreTheArgmaxThenTakesTheTargets) {
  // Row r's argmax is token r.
  std::vector<float> rows(3 * 8, 0.0f);
  for (size_t r = 0; r < 3; ++r) rows[r * 8 + r] = 2.0f;
  SamplingParams p;
  p.temperature = 0;
  RequestRng rng(1);
  EXPECT_EQ(ids(verify(rows, p, rng, {0, 1})), (std::vector<int32_t>{0, 1, 2}));  // both accepted: the bonus too
  EXPECT_EQ(ids(verify(rows, p, rng, {0, 5})), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ids(verify(rows, p, rng, {4, 1})), (std::vector<int32_t>{0}));
  // Each token's logprob is its own row's.
  const std::vector<SampledToken> all = verify(rows, p, rng, {0, 1});
  const double log_z = std::log(std::exp(2.0) + 7.0);
  for (const SampledToken& t : all) EXPECT_NEAR(t.logprob, 2.0 - log_z, 1e-6);
}

TEST(RejectionSamplerTest, EachRowSeesTheDraftsBeforeItAsOutput) {
  // Token 3 leads both rows, token 4 is close behind in the second: a
  // frequency penalty on the drafted 3 makes 4 the second row's choice.
  std::vector<float> rows(2 * 8, 0.0f);
  rows[3] = 5.0f;
  rows[8 + 3] = 5.0f;
  rows[8 + 4] = 4.5f;
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 1.0;
  RequestRng rng(1);
  EXPECT_EQ(ids(verify(rows, p, rng, {3})), (std::vector<int32_t>{3, 4}));
  const std::vector<float> second(rows.begin() + 8, rows.end());
  EXPECT_EQ(sample_once(second, p, rng, {}, {3}).token_id, 4);
}

// Drafts drawn from a proposer's q, accepted with min(1, p/q), else replaced
// from max(0, p - q): the token that comes out follows p, not q, and a
// bonus token after an accepted draft follows its own row.
TEST(RejectionSamplerTest, TokensFollowTheTargetWhateverTheDraftDistribution) {
  const std::vector<double> p = softmax(kToyLogits, 1.0);
  std::vector<float> reversed(kToyLogits.rbegin(), kToyLogits.rend());
  const std::vector<double> q = softmax(reversed, 1.0);
  const std::vector<float> q_rows(q.begin(), q.end());
  std::vector<float> rows = kToyLogits;
  rows.insert(rows.end(), reversed.begin(), reversed.end());  // the bonus row: the reversed distribution
  SamplingParams params;
  RequestRng rng(11);
  std::mt19937_64 proposer(12);
  std::vector<int> first(8, 0), bonus(8, 0);
  for (int i = 0; i < kDraws; ++i) {
    const auto draft = static_cast<int32_t>(std::discrete_distribution<int>(q.begin(), q.end())(proposer));
    const std::vector<SampledToken> out = verify(rows, params, rng, {draft}, &q_rows);
    ++first[static_cast<size_t>(out[0].token_id)];
    if (out.size() == 2) ++bonus[static_cast<size_t>(out[1].token_id)];
  }
  expect_distribution(first, p, q);
  expect_distribution(bonus, q, p);
}

// A proposer that is sure of its draft (n-gram): the draft is kept with
// probability p(draft), else another token is drawn from p without it.
TEST(RejectionSamplerTest, CertainDraftsKeepTheTargetDistribution) {
  const std::vector<double> p = softmax(kToyLogits, 1.0);
  // Were the recovered token drawn from p itself, the draft would come out too often.
  std::vector<double> skewed = p;
  for (size_t t = 0; t < 8; ++t) skewed[t] = (t == 1 ? p[1] : 0.0) + (1 - p[1]) * p[t];
  std::vector<float> rows = kToyLogits;
  rows.insert(rows.end(), kToyLogits.begin(), kToyLogits.end());
  SamplingParams params;
  RequestRng rng(13);
  std::vector<int> first(8, 0);
  for (int i = 0; i < kDraws; ++i) ++first[static_cast<size_t>(verify(rows, params, rng, {1})[0].token_id)];
  expect_distribution(first, p, skewed);
}

TEST(RejectionSamplerTest, SeededVerificationIsReproducible) {
  std::vector<float> rows(4 * 8);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  SamplingParams params;
  auto run = [&](int64_t seed) {
    RequestRng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) {
      for (int32_t t : ids(verify(rows, params, rng, {1, 2, 3}))) out.push_back(t);
    }
    return out;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

}  // namespace
}  // namespace vllm
