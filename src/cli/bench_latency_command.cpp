// `vllm-cpp bench latency`: one batch of fixed-length requests at a time,
// timed per phase (vLLM's benchmark_latency, split into prefill and decode),
// each phase beside the limit this machine allows, measured in the same run.
#include <algorithm>
#include <cstdio>
#include <map>

#include "base/clock.h"
#include "base/file_util.h"
#include "cli/commands.h"
#include "cli/offline_bench.h"
#include "distributed/world.h"
#include "kernels/kernels.h"

namespace vllm::cli {
namespace {

struct BenchLatencyOptions {
  OfflineBenchOptions common;
  int batch_size = 1;
  int num_iters_warmup = 1;
  int num_iters = 3;
  // Every request decodes under this JSON schema (structured outputs): the
  // cost of the grammar's masks beside the same batch unconstrained.
  std::string json_schema_file;
  std::optional<structured::StructuredOutputSpec> constraint;
};

struct IterationTimes {
  double prefill_s = 0;  // adding the batch until every request has its first token
  double decode_s = 0;   // from there to the last token
  int64_t decode_steps = 0;
  int64_t requests_ended_early = 0;         // a constraint completed before output_len
  CommunicationStats decode_communication;  // this rank's collectives while decoding (tensor parallelism)
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

Result<IterationTimes> run_iteration(LLMEngine& engine, int32_t vocab_size, const BenchLatencyOptions& o,
                                     int iteration) {
  const OfflineBenchOptions& c = o.common;
  const auto prompts = random_prompts(o.batch_size, c.input_len, vocab_size, c.seed + static_cast<uint64_t>(iteration));
  SamplingParams params = fixed_length_params(c.output_len, OutputKind::kDelta);
  params.structured_outputs = o.constraint;
  const double start = now_seconds();
  for (size_t i = 0; i < prompts.size(); ++i) {
    VLLM_RETURN_IF_ERROR(engine.add_request("lat-" + std::to_string(iteration) + "-" + std::to_string(i),
                                            PromptInput::from_token_ids(prompts[i]), params));
  }
  std::map<std::string, bool> started;
  double first_tokens_done = 0;
  CommunicationStats decode_start;
  IterationTimes times;
  while (engine.has_unfinished_requests()) {
    for (const RequestOutput& out : engine.step()) {
      if (!out.outputs.empty() && !out.outputs[0].token_ids.empty()) started[out.request_id] = true;
      if (out.finished && out.outputs[0].finish_reason != FinishReason::kLength) ++times.requests_ended_early;
    }
    if (first_tokens_done > 0) ++times.decode_steps;
    if (first_tokens_done == 0 && started.size() == prompts.size()) {
      first_tokens_done = now_seconds();
      decode_start = world().stats();
    }
  }
  times.prefill_s = first_tokens_done - start;
  times.decode_s = now_seconds() - first_tokens_done;
  times.decode_communication = world().stats() - decode_start;
  return times;
}

// What each phase may reach for this model and batch at the given limits: a
// prefill token costs 2 FLOPs per layer weight; a decode step reads every
// weight once for the whole batch (of a mixture's experts, those its tokens
// chose), or is bound by its FLOPs.
struct PhaseLimits {
  double prefill_tps = 0;
  double decode_tps = 0;
};

PhaseLimits phase_limits(const ModelCost& cost, double batch, double bandwidth_gb_per_s, double gflops) {
  return {gflops * 1e9 / (2 * cost.layer_params),
          std::min(batch * bandwidth_gb_per_s * 1e9 / cost.step_weight_bytes(batch),
                   gflops * 1e9 / (2 * (cost.layer_params + cost.lm_head_params)))};
}

// The limits around one iteration: measured just before and just after it,
// each figure the better of the two.  The machine's speed drifts within
// seconds under foreign load, so a phase is compared with the limit of its
// own moment rather than with one taken minutes apart.
kernels::MachineLimits limits_around(const kernels::MachineLimits& before, const kernels::MachineLimits& after) {
  return {std::max(before.bandwidth_gb_per_s, after.bandwidth_gb_per_s),
          std::max(before.peak_gflops, after.peak_gflops), std::max(before.peak_bf16_gflops, after.peak_bf16_gflops),
          std::max(before.peak_amx_bf16_gflops, after.peak_amx_bf16_gflops)};
}

// The job's cost when `ranks` hold equal shares of the model, of which `rank` is one.
ModelCost job_cost(ModelCost rank, int ranks) {
  for (double* share : {&rank.weight_bytes, &rank.layer_params, &rank.lm_head_params, &rank.routed_expert_bytes}) {
    *share *= ranks;
  }
  return rank;
}

int run(const BenchLatencyOptions& o) {
  const OfflineBenchOptions& c = o.common;
  if (Status s = one_engine_only(c.engine, "bench latency"); !s.is_ok()) return report_error(s.message());
  Result<LoadedEngine> loaded = load_engine(c.model, c.engine);
  if (!loaded.is_ok()) return report_error(loaded.status().message());
  if (loaded->worker_finished) return 0;
  // Under tensor parallelism the job's ranks read their shares at once: the
  // limits are the job's, its threads together over every rank's weights
  // (rank 0's share times the ranks).
  const int ranks = c.engine.tensor_parallel_size;
  const ModelCost cost = job_cost(loaded->model->cost(), ranks);
  EngineFlags job_flags = c.engine;
  job_flags.threads = engine_threads(c.engine) * ranks;
  constexpr int kProbeRepetitions = 2;  // per side of an iteration: the best of four sweeps of each figure
  std::vector<double> prefill, decode;
  CommunicationStats decode_communication;
  int64_t decode_steps = 0;
  int64_t ended_early = 0;
  std::vector<kernels::MachineLimits> iteration_limits;
  kernels::MachineLimits before = measure_limits(job_flags, cost.weight_bytes, kProbeRepetitions);
  for (int i = 0; i < o.num_iters_warmup + o.num_iters; ++i) {
    Result<IterationTimes> times =
        run_iteration(*loaded->engine, static_cast<int32_t>(loaded->model->config().vocab_size), o, i);
    if (!times.is_ok()) return report_error(times.status().message());
    const kernels::MachineLimits after = measure_limits(job_flags, cost.weight_bytes, kProbeRepetitions);
    if (i >= o.num_iters_warmup) {
      decode_communication += times->decode_communication;
      decode_steps += times->decode_steps;
      prefill.push_back(times->prefill_s);
      decode.push_back(times->decode_s / static_cast<double>(std::max<int64_t>(1, times->decode_steps)));
      ended_early += times->requests_ended_early;
      iteration_limits.push_back(limits_around(before, after));
    }
    before = after;
  }

  // FP32 FMAs are the yardstick (BF16 weights widened in registers); where
  // the kernels feed BF16 weights to a dot-product unit or to AMX tiles
  // instead, its peak is the limit of the arithmetic in use, reported beside
  // it.  Fractions are the median over iterations of each one against its
  // own limits.
  const bool bf16_unit = cost.bf16_matrices && kernels::bf16_weights_peak(iteration_limits[0]) > 0;
  const double batch = o.batch_size;
  std::vector<double> prefill_fraction, decode_fraction, prefill_kernel_fraction, decode_kernel_fraction;
  std::vector<double> bandwidth, fma_peak, bf16_peak, amx_peak, prefill_limit, decode_limit;
  for (size_t i = 0; i < prefill.size(); ++i) {
    const kernels::MachineLimits& l = iteration_limits[i];
    const PhaseLimits fp32 = phase_limits(cost, batch, l.bandwidth_gb_per_s, l.peak_gflops);
    const PhaseLimits kernel =
        phase_limits(cost, batch, l.bandwidth_gb_per_s, bf16_unit ? kernels::bf16_weights_peak(l) : l.peak_gflops);
    const double prefill_tps = batch * c.input_len / prefill[i];
    const double decode_tps = c.output_len > 1 ? batch / decode[i] : 0.0;
    prefill_fraction.push_back(prefill_tps / fp32.prefill_tps);
    decode_fraction.push_back(decode_tps / fp32.decode_tps);
    prefill_kernel_fraction.push_back(prefill_tps / kernel.prefill_tps);
    decode_kernel_fraction.push_back(decode_tps / kernel.decode_tps);
    bandwidth.push_back(l.bandwidth_gb_per_s);
    fma_peak.push_back(l.peak_gflops);
    bf16_peak.push_back(l.peak_bf16_gflops);
    amx_peak.push_back(l.peak_amx_bf16_gflops);
    prefill_limit.push_back(fp32.prefill_tps);
    decode_limit.push_back(fp32.decode_tps);
  }
  const kernels::MachineLimits limits{median(bandwidth), median(fma_peak), median(bf16_peak), median(amx_peak)};
  const double prefill_s = median(prefill), decode_step_s = median(decode);
  const double prefill_tps = batch * c.input_len / prefill_s;
  const bool has_decode = c.output_len > 1;
  const double decode_tps = has_decode ? batch / decode_step_s : 0.0;
  print_limits(job_flags, cost.weight_bytes, limits);

  std::printf("model %s, batch %d, %d in / %d out, %d threads", c.model.c_str(), o.batch_size, c.input_len,
              c.output_len, engine_threads(c.engine));
  if (ranks > 1) std::printf(" on each of %d tensor-parallel ranks", ranks);
  std::printf(", %s kernels, median of %d\n", kernels::cpu_isa().c_str(), o.num_iters);
  if (o.constraint) {
    std::printf("every request under the JSON schema of %s; %lld of %d ended before --output-len\n",
                o.json_schema_file.c_str(), static_cast<long long>(ended_early), o.batch_size * o.num_iters);
  }
  std::printf("%-8s %12s %14s %14s %10s\n", "phase", "time (ms)", "tokens/s", "limit tok/s", "of limit");
  std::printf("%-8s %12.2f %14.1f %14.1f %9.1f%%\n", "prefill", prefill_s * 1e3, prefill_tps, median(prefill_limit),
              100 * median(prefill_fraction));
  if (has_decode) {
    std::printf("%-8s %12.2f %14.1f %14.1f %9.1f%%   (per step)\n", "decode", decode_step_s * 1e3, decode_tps,
                median(decode_limit), 100 * median(decode_fraction));
  }
  std::printf(
      "limits measured around each iteration (medians): read bandwidth %.1f GB/s, FP32 FMA peak %.0f GFLOP/s; "
      "weights %.1f MB",
      limits.bandwidth_gb_per_s, limits.peak_gflops, cost.weight_bytes / 1e6);
  if (cost.routed_expert_bytes > 0) {
    std::printf(" a token, %.1f MB a decode step of %d (experts routed evenly)", cost.step_weight_bytes(batch) / 1e6,
                o.batch_size);
  }
  std::printf("\n");
  if (bf16_unit) {
    std::printf("BF16 weights run on %s, peak %.0f GFLOP/s: prefill %.1f%%",
                kernels::cpu_isa() == "amx" ? "AMX tiles" : "the BF16 dot product", kernels::bf16_weights_peak(limits),
                100 * median(prefill_kernel_fraction));
    if (has_decode) std::printf(" and decode %.1f%%", 100 * median(decode_kernel_fraction));
    std::printf(" of that arithmetic's limits\n");
  }

  if (ranks > 1 && has_decode && decode_steps > 0) {
    const double steps = static_cast<double>(decode_steps);
    const double comm_ms = decode_communication.seconds / steps * 1e3;
    std::printf(
        "communication per decode step (rank 0): %.1f collectives, %.1f KB of its own, %.3f ms (%.1f%% of "
        "the step)\n",
        static_cast<double>(decode_communication.collectives) / steps,
        static_cast<double>(decode_communication.bytes) / steps / 1e3, comm_ms, 100 * comm_ms / (decode_step_s * 1e3));
  }

  OrderedJson report = report_base(c, limits);
  report["batch_size"] = o.batch_size;
  report["num_iters"] = o.num_iters;
  if (o.constraint) {
    report["json_schema_file"] = o.json_schema_file;
    report["requests_ended_early"] = ended_early;
  }
  report["prefill_time_ms"] = prefill_s * 1e3;
  report["prefill_tokens_per_s"] = prefill_tps;
  report["decode_time_per_step_ms"] = decode_step_s * 1e3;
  report["decode_tokens_per_s"] = decode_tps;
  if (ranks > 1) {
    report["tensor_parallel_size"] = ranks;
    if (decode_steps > 0) {
      const double steps = static_cast<double>(decode_steps);
      report["decode_communication_ms_per_step"] = decode_communication.seconds / steps * 1e3;
      report["decode_communication_bytes_per_step"] = static_cast<double>(decode_communication.bytes) / steps;
      report["decode_collectives_per_step"] = static_cast<double>(decode_communication.collectives) / steps;
    }
  }
  report["weight_bytes"] = cost.weight_bytes;
  report["decode_step_weight_bytes"] = cost.step_weight_bytes(batch);
  report["prefill_limit_tokens_per_s"] = median(prefill_limit);
  report["decode_limit_tokens_per_s"] = median(decode_limit);
  report["prefill_fraction_of_limit"] = median(prefill_fraction);
  report["decode_fraction_of_limit"] = median(decode_fraction);
  // The same against the peak of the arithmetic in use (the BF16 dot product's or AMX's, where it runs).
  report["kernel_peak_gflops"] = bf16_unit ? kernels::bf16_weights_peak(limits) : limits.peak_gflops;
  report["prefill_fraction_of_kernel_limit"] = median(prefill_kernel_fraction);
  report["decode_fraction_of_kernel_limit"] = median(decode_kernel_fraction);
  for (size_t i = 0; i < prefill.size(); ++i) {
    report["prefill_times_ms"].push_back(prefill[i] * 1e3);
    report["decode_times_per_step_ms"].push_back(decode[i] * 1e3);
    report["bandwidth_per_iteration_gb_per_s"].push_back(bandwidth[i]);
    report["peak_gflops_per_iteration"].push_back(fma_peak[i]);
  }
  return write_report(c.output_json, report) ? 0 : 1;
}

}  // namespace

CommandRunner add_bench_latency_command(CLI::App& app) {
  auto o = std::make_shared<BenchLatencyOptions>();
  add_offline_bench_flags(app, o->common, 32, 128);
  app.add_option("--batch-size", o->batch_size, "Requests run together")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--num-iters-warmup", o->num_iters_warmup, "Untimed iterations first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--num-iters", o->num_iters, "Timed iterations (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--json-schema", o->json_schema_file,
                 "Decode every request under this JSON schema (a file): the structured-output overhead")
      ->check(CLI::ExistingFile);
  return [o] {
    if (!o->json_schema_file.empty()) {
      Result<std::string> text = read_text_file(o->json_schema_file);
      if (!text.is_ok()) return report_error(text.status().message());
      o->constraint =
          structured::StructuredOutputSpec{structured::ConstraintKind::kJsonSchema, *text, {}, "--json-schema"};
    }
    return run(*o);
  };
}

}  // namespace vllm::cli
