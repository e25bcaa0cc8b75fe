// What speculative decoding costs beside the step it saves, on a model's
// shape: one verification pass over 1 + k tokens of one sequence against
// one decode step (k = 0) at the same context, and what the n-gram proposer
// and the rejection sampler add to a step.  Decode reads every weight once
// per pass, so the k extra tokens should be nearly free; the weights' bytes
// over the read bandwidth measured here give the step's floor.  Passes are
// interleaved (k = 0, 1, 2, 4, 6 in turn) and each figure is a median.
// Usage: verify_cost MODEL_DIR [CONTEXT=512] [REPETITIONS=30] [THREADS=2]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>

#include "base/clock.h"
#include "engine/engine_config.h"
#include "engine/runner/model_runner.h"
#include "engine/sample/sampler.h"
#include "engine/spec/ngram_proposer.h"
#include "kernels/kernels.h"
#include "kernels/machine_limits.h"

namespace {

using namespace vllm;

constexpr int32_t kBlockSize = 16;
const int32_t kDraftCounts[] = {0, 1, 2, 4, 6};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of `f`, the median of `repetitions` timings of `inner` calls each.
template <typename F>
double time_calls(F&& f, int repetitions, int inner) {
  std::vector<double> t;
  for (int r = 0; r < repetitions; ++r) {
    const double start = now_seconds();
    for (int i = 0; i < inner; ++i) f();
    t.push_back((now_seconds() - start) / inner);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: verify_cost MODEL_DIR [CONTEXT=512] [REPETITIONS=30] [THREADS=2]\n");
    return 2;
  }
  const int32_t context = argc > 2 ? std::atoi(argv[2]) : 512;
  const int repetitions = argc > 3 ? std::atoi(argv[3]) : 30;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  Result<std::unique_ptr<Model>> loaded = load_model(argv[1]);
  if (!loaded.is_ok()) {
    std::fprintf(stderr, "error: %s\n", loaded.status().message().c_str());
    return 1;
  }
  Model& model = **loaded;
  const auto vocab = static_cast<int32_t>(model.config().vocab_size);
  ThreadPool pool(threads);
  const std::vector<LayerKVSpec> kv_spec = model.kv_cache_spec();
  const KVCacheShape shape{kv_spec, kBlockSize, auto_kv_cache_dtype(model.config(), kv_spec)};
  const int32_t max_drafts = *std::max_element(std::begin(kDraftCounts), std::end(kDraftCounts));
  const int32_t num_blocks = (context + max_drafts + 1 + kBlockSize - 1) / kBlockSize;
  ModelRunner runner(model, pool, shape, num_blocks);
  std::vector<BlockId> block_table(static_cast<size_t>(num_blocks));
  std::iota(block_table.begin(), block_table.end(), 0);

  // The context, computed once; every pass then reads it and writes past it.
  std::mt19937 rng(1);
  std::vector<int32_t> tokens(static_cast<size_t>(context + max_drafts + 1));
  for (int32_t& t : tokens) t = static_cast<int32_t>(3 + rng() % static_cast<uint32_t>(vocab - 3));
  ForwardChunk prefill;
  prefill.token_ids = std::span<const int32_t>(tokens).first(static_cast<size_t>(context));
  prefill.num_prompt_tokens = context;
  prefill.block_table = block_table;
  prefill.num_logits = 1;
  runner.execute(std::span<const ForwardChunk>(&prefill, 1));

  auto verification = [&](int32_t k) {
    ForwardChunk c;
    c.token_ids = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(context), 1);
    c.draft_token_ids =
        std::span<const int32_t>(tokens).subspan(static_cast<size_t>(context) + 1, static_cast<size_t>(k));
    c.num_computed_tokens = context;
    c.num_prompt_tokens = context;
    c.block_table = block_table;
    c.num_logits = 1 + k;
    return c;
  };
  std::map<int32_t, std::vector<double>> pass_seconds;
  for (int r = 0; r < repetitions + 2; ++r) {
    for (int32_t k : kDraftCounts) {
      const ForwardChunk c = verification(k);
      const double start = now_seconds();
      runner.execute(std::span<const ForwardChunk>(&c, 1));
      if (r >= 2) pass_seconds[k].push_back(now_seconds() - start);  // two warm-up rounds
    }
  }

  // The rejection sampler over the pass's rows (greedy, and random with the
  // n-gram's certain drafts), and the n-gram proposer over the whole context.
  Sampler sampler(vocab, {});
  std::vector<float> logits(static_cast<size_t>(max_drafts + 1) * static_cast<size_t>(vocab));
  for (float& l : logits) l = static_cast<float>(rng() % 1000) / 100.0f;
  const std::span<const int32_t> history = std::span<const int32_t>(tokens).first(static_cast<size_t>(context));
  auto sample_seconds = [&](int32_t k, bool greedy) {
    SamplingParams params;
    params.temperature = greedy ? 0.0 : 1.0;
    RequestRng row_rng(1);
    std::vector<float> scratch;
    const std::vector<int32_t> drafts(tokens.begin(), tokens.begin() + k);
    return time_calls(
        [&] {
          scratch = logits;
          SamplingRow row;
          row.logits = scratch.data();
          row.params = &params;
          row.prompt_token_ids = history.first(8);
          row.output_token_ids = history.subspan(8);
          row.rng = &row_rng;
          row.draft_token_ids = drafts;
          sampler.sample(std::span<const SamplingRow>(&row, 1), pool);
        },
        repetitions, 10);
  };
  const double proposer_s = time_calls([&] { (void)ngram_drafts(history, 5, 5, max_drafts); }, repetitions, 10);

  const ModelCost cost = model.cost();
  const double bandwidth =
      kernels::measure_read_bandwidth(pool, std::max<size_t>(size_t{16} << 20, static_cast<size_t>(cost.weight_bytes)));
  const double floor_s = cost.weight_bytes / (bandwidth * 1e9);
  const double step_s = median(pass_seconds[0]);
  std::printf(
      "model %s, context %d, %d threads, %s kernels, median of %d; weights %.1f MB, read bandwidth %.1f GB/s: "
      "a step reads them in %.2f ms at best\n",
      argv[1], context, threads, kernels::cpu_isa().c_str(), repetitions, cost.weight_bytes / 1e6, bandwidth,
      floor_s * 1e3);
  std::printf("%-7s %10s %10s %16s %16s\n", "drafts", "pass ms", "x step", "greedy verify us", "random verify us");
  std::map<int32_t, double> random_sample_s;  // timed once, for the table and the overhead
  for (int32_t k : kDraftCounts) {
    const double pass = median(pass_seconds[k]);
    random_sample_s[k] = sample_seconds(k, false);
    std::printf("%-7d %10.2f %10.3f %16.1f %16.1f\n", k, pass * 1e3, pass / step_s, sample_seconds(k, true) * 1e6,
                random_sample_s[k] * 1e6);
  }
  const double spec_overhead = proposer_s + random_sample_s[4] - random_sample_s[0];
  std::printf(
      "n-gram proposer over %d tokens (no match: the whole scan): %.1f us; proposer plus the verification's "
      "extra sampling at k = 4: %.2f%% of a step\n",
      context, proposer_s * 1e6, 100.0 * spec_overhead / step_s);
  return 0;
}
