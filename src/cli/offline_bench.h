// What `bench latency` and `bench throughput` share: the engine they load,
// random prompts that never hit the prefix cache, the machine's limits
// measured in the same run, and writing the JSON report.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "cli/engine_flags.h"
#include "kernels/machine_limits.h"

namespace vllm::cli {

struct OfflineBenchOptions {
  std::string model;
  int input_len = 0;
  int output_len = 0;
  uint64_t seed = 0;
  std::string output_json;
  EngineFlags engine;
};

// --model, --input-len, --output-len, --seed, --output-json and the engine flags.
void add_offline_bench_flags(CLI::App& app, OfflineBenchOptions& o, int default_input_len, int default_output_len);

// `count` prompts of `len` token ids drawn uniformly from the vocabulary
// (ids below 3 avoided: BOS/EOS/UNK in most vocabularies).
std::vector<std::vector<int32_t>> random_prompts(int count, int len, int32_t vocab_size, uint64_t seed);

// Greedy, exactly `output_len` tokens (EOS ignored).
SamplingParams fixed_length_params(int output_len, OutputKind kind);

// Measured on as many threads as the engine computes with, the bandwidth over
// a working set as large as the model's weights (what decode streams: the
// host's large shared L3 holds part of a small model, and the probe should
// see the same caches), each figure the best of `repetitions`.
kernels::MachineLimits measure_limits(const EngineFlags& flags, double weight_bytes, int repetitions = 5);
// One line on stderr.
void print_limits(const EngineFlags& flags, double weight_bytes, const kernels::MachineLimits& limits);

// The fields every report starts with: model, lengths, threads, ISA and the
// limits measured.
OrderedJson report_base(const OfflineBenchOptions& o, const kernels::MachineLimits& limits);

// Writes `report` to `path` (nothing when empty); false, with a message, if it cannot.
bool write_report(const std::string& path, const OrderedJson& report);

}  // namespace vllm::cli
