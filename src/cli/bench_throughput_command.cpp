// `vllm-cpp bench throughput`: offline batch throughput with vLLM's
// benchmark_throughput semantics: every request submitted at once, run to
// completion, counted over the wall time.
#include <cstdio>

#include "base/clock.h"
#include "cli/commands.h"
#include "cli/offline_bench.h"
#include "kernels/kernels.h"

namespace vllm::cli {
namespace {

struct BenchThroughputOptions {
  OfflineBenchOptions common;
  int num_prompts = 64;
};

int run(const BenchThroughputOptions& o) {
  const OfflineBenchOptions& c = o.common;
  if (Status s = one_engine_only(c.engine, "bench throughput"); !s.is_ok()) return report_error(s.message());
  Result<LoadedEngine> loaded = load_engine(c.model, c.engine);
  if (!loaded.is_ok()) return report_error(loaded.status().message());
  if (loaded->worker_finished) return 0;
  const kernels::MachineLimits limits = measure_limits(c.engine, loaded->model->cost().weight_bytes);
  print_limits(c.engine, loaded->model->cost().weight_bytes, limits);
  const auto token_prompts =
      random_prompts(o.num_prompts, c.input_len, static_cast<int32_t>(loaded->model->config().vocab_size), c.seed);
  std::vector<PromptInput> prompts;
  for (const auto& p : token_prompts) prompts.push_back(PromptInput::from_token_ids(p));
  const double start = now_seconds();
  Result<std::vector<RequestOutput>> outputs =
      loaded->engine->generate(prompts, {fixed_length_params(c.output_len, OutputKind::kFinalOnly)});
  const double elapsed = now_seconds() - start;
  if (!outputs.is_ok()) return report_error(outputs.status().message());
  int64_t output_tokens = 0;
  for (const RequestOutput& out : *outputs) output_tokens += static_cast<int64_t>(out.outputs[0].token_ids.size());
  const int64_t total_tokens = int64_t{o.num_prompts} * c.input_len + output_tokens;

  std::printf("model %s, %d requests of %d in / %d out, %d threads, %s kernels\n", c.model.c_str(), o.num_prompts,
              c.input_len, c.output_len, engine_threads(c.engine), kernels::cpu_isa().c_str());
  std::printf("Throughput: %.2f requests/s, %.1f total tokens/s, %.1f output tokens/s (%.2f s)\n",
              o.num_prompts / elapsed, total_tokens / elapsed, output_tokens / elapsed, elapsed);
  const EngineCoreStats stats = loaded->engine->stats();
  if (stats.spec_decoding) std::printf("%s\n", spec_decoding_summary(*stats.spec_decoding).c_str());
  std::printf("limits measured now: read bandwidth %.1f GB/s, FP32 FMA peak %.0f GFLOP/s\n", limits.bandwidth_gb_per_s,
              limits.peak_gflops);

  OrderedJson report = report_base(c, limits);
  report["num_requests"] = o.num_prompts;
  report["elapsed_time"] = elapsed;
  report["total_num_tokens"] = total_tokens;
  report["requests_per_s"] = o.num_prompts / elapsed;
  report["total_tokens_per_s"] = total_tokens / elapsed;
  report["output_tokens_per_s"] = output_tokens / elapsed;
  return write_report(c.output_json, report) ? 0 : 1;
}

}  // namespace

CommandRunner add_bench_throughput_command(CLI::App& app) {
  auto o = std::make_shared<BenchThroughputOptions>();
  add_offline_bench_flags(app, o->common, 128, 128);
  app.add_option("--num-prompts", o->num_prompts, "Requests, all submitted at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  return [o] { return run(*o); };
}

}  // namespace vllm::cli
