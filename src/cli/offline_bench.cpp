#include "cli/offline_bench.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "base/thread_pool.h"
#include "kernels/kernels.h"

namespace vllm::cli {

void add_offline_bench_flags(CLI::App& app, OfflineBenchOptions& o, int default_input_len, int default_output_len) {
  o.input_len = default_input_len;
  o.output_len = default_output_len;
  app.add_option("--model", o.model, "Hugging Face model directory")->required();
  app.add_option("--input-len", o.input_len, "Prompt tokens per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--output-len", o.output_len, "Generated tokens per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", o.seed, "Seed of the random prompts")->capture_default_str();
  app.add_option("--output-json", o.output_json, "Also write the results as JSON");
  add_engine_flags(app, o.engine);
}

std::vector<std::vector<int32_t>> random_prompts(int count, int len, int32_t vocab_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> id(std::min(3, vocab_size - 1), vocab_size - 1);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(count));
  for (auto& p : prompts) {
    p.resize(static_cast<size_t>(len));
    for (auto& t : p) t = id(rng);
  }
  return prompts;
}

SamplingParams fixed_length_params(int output_len, OutputKind kind) {
  SamplingParams params;
  params.temperature = 0.0;
  params.max_tokens = output_len;
  params.ignore_eos = true;
  params.output_kind = kind;
  return params;
}

namespace {

// A floor for toy models, whose weights are too few bytes to time a sweep over.
size_t bandwidth_working_set(double weight_bytes) {
  return std::max<size_t>(size_t{16} << 20, static_cast<size_t>(weight_bytes));
}

}  // namespace

kernels::MachineLimits measure_limits(const EngineFlags& flags, double weight_bytes, int repetitions) {
  ThreadPool pool(engine_threads(flags));
  kernels::MachineLimits limits;
  limits.bandwidth_gb_per_s = kernels::measure_read_bandwidth(pool, bandwidth_working_set(weight_bytes), repetitions);
  limits.peak_gflops = kernels::measure_fma_peak(pool, repetitions);
  limits.peak_bf16_gflops = kernels::measure_bf16_dot_peak(pool, repetitions);
  limits.peak_amx_bf16_gflops = kernels::measure_amx_bf16_peak(pool, repetitions);
  return limits;
}

void print_limits(const EngineFlags& flags, double weight_bytes, const kernels::MachineLimits& limits) {
  std::fprintf(stderr,
               "machine limits now (%d threads, %s): read bandwidth %.1f GB/s over %.0f MB, FP32 FMA peak %.0f "
               "GFLOP/s",
               engine_threads(flags), kernels::cpu_isa().c_str(), limits.bandwidth_gb_per_s,
               bandwidth_working_set(weight_bytes) / 1e6, limits.peak_gflops);
  if (limits.peak_bf16_gflops > 0) std::fprintf(stderr, ", BF16 dot peak %.0f GFLOP/s", limits.peak_bf16_gflops);
  if (limits.peak_amx_bf16_gflops > 0) {
    std::fprintf(stderr, ", AMX BF16 peak %.0f GFLOP/s", limits.peak_amx_bf16_gflops);
  }
  std::fprintf(stderr, "\n");
}

OrderedJson report_base(const OfflineBenchOptions& o, const kernels::MachineLimits& limits) {
  OrderedJson report;
  report["model"] = o.model;
  report["input_len"] = o.input_len;
  report["output_len"] = o.output_len;
  report["threads"] = engine_threads(o.engine);
  report["cpu_isa"] = kernels::cpu_isa();
  report["bandwidth_gb_per_s"] = limits.bandwidth_gb_per_s;
  report["peak_gflops"] = limits.peak_gflops;
  if (limits.peak_bf16_gflops > 0) report["peak_bf16_gflops"] = limits.peak_bf16_gflops;
  if (limits.peak_amx_bf16_gflops > 0) report["peak_amx_bf16_gflops"] = limits.peak_amx_bf16_gflops;
  return report;
}

bool write_report(const std::string& path, const OrderedJson& report) {
  if (path.empty()) return true;
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  if (out) return true;
  std::fprintf(stderr, "error: cannot write %s\n", path.c_str());
  return false;
}

}  // namespace vllm::cli
