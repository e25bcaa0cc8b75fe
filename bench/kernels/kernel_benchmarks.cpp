// Google Benchmark micro-benchmarks of the kernels, each figure beside the
// machine's limit measured at start-up in the same run (the machine is shared
// and drifts): GEMM in GFLOP/s and as a fraction of the FP32 FMA peak, GEMV
// (one activation row) in GB/s of weights streamed and as a fraction of the
// read bandwidth, attention and the thread pool's per-op overhead.
//
//   kernel_benchmarks [--threads N] [--cpu-isa ISA] [google benchmark flags...]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"
#include "kernels/group_quantized.h"
#include "kernels/kernels.h"
#include "kernels/machine_limits.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels {
namespace {

int g_threads = ThreadPool::default_num_threads();
MachineLimits g_limits;

ThreadPool& pool() {
  static ThreadPool p(g_threads);
  return p;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

PackedMatrix random_packed(DType dtype, int64_t n, int64_t k) {
  const std::vector<float> w = random_floats(static_cast<size_t>(n * k), 7);
  if (dtype == DType::kF32) return pack_matrix(Tensor{w.data(), dtype, {n, k}}, pool());
  std::vector<uint16_t> half(w.size());
  for (size_t i = 0; i < w.size(); ++i) half[i] = dtype == DType::kBF16 ? f32_to_bf16(w[i]) : f32_to_f16(w[i]);
  return pack_matrix(Tensor{half.data(), dtype, {n, k}}, pool());
}

// Times linear() of m rows over w.  Counters: GFLOP/s and GB/s of w's
// values as stored, and their shares of the measured peak and bandwidth.
void time_linear(benchmark::State& state, const PackedMatrix& w, int64_t m) {
  const std::vector<float> x = random_floats(static_cast<size_t>(m * w.cols), 8);
  std::vector<float> y(static_cast<size_t>(m * w.rows));
  for (auto _ : state) {
    linear(x.data(), m, w, nullptr, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * static_cast<double>(m * w.rows * w.cols), bytes = w.value_bytes();
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_peak"] =
      benchmark::Counter(flops / 1e9 / g_limits.peak_gflops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_bandwidth"] =
      benchmark::Counter(bytes / 1e9 / g_limits.bandwidth_gb_per_s, benchmark::Counter::kIsIterationInvariantRate);
}

// Args: m, n, k.
void BM_Linear(benchmark::State& state, DType dtype) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  time_linear(state, random_packed(dtype, n, k), m);
  if (dtype == DType::kBF16 && bf16_weights_peak(g_limits) > 0) {  // on the dot product or AMX
    const double flops = 2.0 * static_cast<double>(m * n * k);
    state.counters["of_bf16_peak"] =
        benchmark::Counter(flops / 1e9 / bf16_weights_peak(g_limits), benchmark::Counter::kIsIterationInvariantRate);
  }
}

// A quantized matrix of random codes in `bits` (4: Q4_0's signed codes, 8:
// Q8_0's), groups of 32 with FP16 scales and no offsets, as those ggml types
// are packed.
PackedMatrix random_quantized(int bits, int64_t n, int64_t k) {
  std::mt19937 rng(7);
  const int low = bits == 4 ? -8 : -128, high = bits == 4 ? 7 : 127;
  std::uniform_int_distribution<int> code(low, high);
  GroupQuantized q;
  q.rows = n, q.cols = k, q.group_size = 32;
  for (int64_t i = 0; i < n * k; ++i) q.codes.push_back(static_cast<int8_t>(code(rng)));
  q.scales.assign(static_cast<size_t>(n * k / 32), 0.01f);
  return pack_quantized_matrices({&q}, pool());
}

// Args: m, n, k.
void BM_LinearQuantized(benchmark::State& state, int bits) {
  time_linear(state, random_quantized(bits, state.range(1), state.range(2)), state.range(0));
}

// The K-quants of ggml as a GGUF tensor of the type loads: random codes,
// group scales an FP16 base per 256 values times an int8 step, and for
// Q4_K offsets too (a negative base times a step).
struct KQuant {
  const char* name;
  int lowest_code, highest_code;
  int64_t group_size;
  bool offsets;
};
constexpr KQuant kQ4K{"Q4K", 0, 15, 32, true}, kQ6K{"Q6K", -32, 31, 16, false};

// A matrix of such a type, computed against Q8_0 activation blocks (gemm.h's
// block int8 arithmetic) or, with `blocks` false, in its float32 quantized
// arithmetic (codes against FP32 activations).
PackedMatrix random_k_quant(const KQuant& type, int64_t n, int64_t k, bool blocks) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> code(type.lowest_code, type.highest_code), step(-128, 127);
  GroupQuantized q;
  q.rows = n, q.cols = k, q.group_size = type.group_size, q.super_groups = 256 / type.group_size;
  q.block_int8_activations = blocks;
  for (int64_t i = 0; i < n * k; ++i) q.codes.push_back(static_cast<int8_t>(code(rng)));
  q.scale_bases.assign(static_cast<size_t>(n * k / 256), 0.001f);
  if (type.offsets) q.offset_bases.assign(static_cast<size_t>(n * k / 256), -0.002f);
  for (int64_t g = 0; g < n * k / type.group_size; ++g) {
    q.scale_steps.push_back(static_cast<int8_t>(step(rng)));
    q.scales.push_back(0.001f * static_cast<float>(q.scale_steps.back()));
    if (!type.offsets) continue;
    q.offset_steps.push_back(static_cast<int8_t>(step(rng)));
    q.offsets.push_back(-0.002f * static_cast<float>(q.offset_steps.back()));
  }
  return pack_quantized_matrices({&q}, pool());
}
// Args: m, n, k.
void BM_LinearKQuant(benchmark::State& state, KQuant type, bool blocks) {
  time_linear(state, random_k_quant(type, state.range(1), state.range(2), blocks), state.range(0));
}
// W8A8: random int8 codes, a scale per row, activations quantized to int8
// per row as linear() meets them (gemm.h's int8 arithmetic).  Args: m, n, k.
void BM_LinearInt8(benchmark::State& state) {
  const int64_t n = state.range(1), k = state.range(2);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> code(-128, 127);
  GroupQuantized q;
  q.rows = n, q.cols = k, q.group_size = k, q.int8_activations = true;
  for (int64_t i = 0; i < n * k; ++i) q.codes.push_back(static_cast<int8_t>(code(rng)));
  q.scales.assign(static_cast<size_t>(n), 0.01f);
  time_linear(state, pack_int8_dot_matrices({&q}, pool()), state.range(0));
}

// A decode step's matrix work: every weight of smollm-135m's 30 layers and
// its LM head (269 MB in BF16, far beyond the caches), stacked as the model
// stacks them, for `batch` activation rows (arg), in the model's order.
// Counters: GB/s of weights and its share of the measured read bandwidth
// (what batch-1 decode can reach at best), GFLOP/s and its share of the
// FP32 FMA peak (what bounds large batches).
void BM_DecodeWeightsSmollm(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const int64_t hidden = 576, qkv = 576 + 2 * 192, inter = 1536, vocab = 49152, layers = 30;
  std::vector<PackedMatrix> matrices;
  for (int64_t l = 0; l < layers; ++l) {
    for (auto [n, k] : {std::pair{qkv, hidden}, {hidden, hidden}, {2 * inter, hidden}, {hidden, inter}}) {
      matrices.push_back(random_packed(DType::kBF16, n, k));
    }
  }
  matrices.push_back(random_packed(DType::kBF16, vocab, hidden));
  const std::vector<float> x = random_floats(static_cast<size_t>(batch * 2 * inter), 8);
  std::vector<float> y(static_cast<size_t>(batch * vocab));
  double bytes = 0, flops = 0;
  for (const PackedMatrix& m : matrices) {
    bytes += static_cast<double>(m.rows * m.cols * 2);
    flops += 2.0 * static_cast<double>(batch * m.rows * m.cols);
  }
  for (auto _ : state) {
    for (const PackedMatrix& m : matrices) linear(x.data(), batch, m, nullptr, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_bandwidth"] =
      benchmark::Counter(bytes / 1e9 / g_limits.bandwidth_gb_per_s, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_peak"] =
      benchmark::Counter(flops / 1e9 / g_limits.peak_gflops, benchmark::Counter::kIsIterationInvariantRate);
}

// The same for llama-3.2-1b as its Q4_K_M GGUF stores it (q, k, o, gate
// and up Q4_K; v, down and the tied LM head Q6_K: 800 MB in the file), one activation
// row against Q8_0 activation blocks: what its batch-1 decode streams, with
// the pool's hand-offs between matrices but nothing else of a step.  Built
// once (about a billion random codes) and kept for the benchmark's runs.
void BM_DecodeWeightsLlama1bQ4KM(benchmark::State& state) {
  const int64_t hidden = 2048, kv = 512, inter = 8192, vocab = 128256, layers = 16;
  static const std::vector<PackedMatrix> matrices = [&] {
    std::vector<PackedMatrix> built;
    for (int64_t l = 0; l < layers; ++l) {
      built.push_back(random_k_quant(kQ4K, hidden, hidden, true));  // q
      built.push_back(random_k_quant(kQ4K, kv, hidden, true));      // k
      built.push_back(random_k_quant(kQ6K, kv, hidden, true));      // v
      built.push_back(random_k_quant(kQ4K, hidden, hidden, true));  // o
      built.push_back(random_k_quant(kQ4K, 2 * inter, hidden, true));
      built.push_back(random_k_quant(kQ6K, hidden, inter, true));
    }
    built.push_back(random_k_quant(kQ6K, vocab, hidden, true));
    return built;
  }();
  const std::vector<float> x = random_floats(static_cast<size_t>(inter), 8);
  std::vector<float> y(static_cast<size_t>(vocab));
  double bytes = 0;
  for (const PackedMatrix& m : matrices) bytes += m.value_bytes();
  for (auto _ : state) {
    for (const PackedMatrix& m : matrices) linear(x.data(), 1, m, nullptr, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_bandwidth"] =
      benchmark::Counter(bytes / 1e9 / g_limits.bandwidth_gb_per_s, benchmark::Counter::kIsIterationInvariantRate);
}

// Decode attention: args = sequences, context length; the KV cache's dtype.
// Counter: GB/s of KV read.
void BM_PagedAttentionDecode(benchmark::State& state, DType dtype) {
  const int32_t num_seqs = static_cast<int32_t>(state.range(0)), context = static_cast<int32_t>(state.range(1));
  const int32_t block_size = 16, kv_heads = 3, heads = 9, head_dim = 64;
  const int32_t blocks_per_seq = (context + block_size - 1) / block_size;
  const int32_t num_blocks = num_seqs * blocks_per_seq;
  const size_t elements = static_cast<size_t>(num_blocks) * kv_heads * block_size * head_dim;
  AlignedBuffer keys(elements * dtype_size(dtype)), values(elements * dtype_size(dtype));
  PagedKVLayer layer{keys.data(), values.data(), dtype, num_blocks, block_size, kv_heads, head_dim};
  // Every slot written once, through the kernel that fills the cache.
  const int64_t tokens = int64_t{num_blocks} * block_size;
  const std::vector<float> k = random_floats(static_cast<size_t>(tokens) * kv_heads * head_dim, 1);
  const std::vector<float> v = random_floats(k.size(), 2);
  std::vector<int32_t> slots(static_cast<size_t>(tokens));
  for (int32_t i = 0; i < tokens; ++i) slots[static_cast<size_t>(i)] = i;
  write_kv_cache(k.data(), v.data(), slots.data(), tokens, layer);
  std::vector<int32_t> query_start(static_cast<size_t>(num_seqs) + 1), seq_lens(static_cast<size_t>(num_seqs), context);
  std::vector<int32_t> tables(static_cast<size_t>(num_blocks));
  for (int32_t s = 0; s <= num_seqs; ++s) query_start[static_cast<size_t>(s)] = s;
  for (int32_t b = 0; b < num_blocks; ++b) tables[static_cast<size_t>(b)] = b;
  AttentionMetadata meta;
  meta.num_seqs = num_seqs;
  meta.query_start_loc = query_start.data();
  meta.seq_lens = seq_lens.data();
  meta.block_tables = tables.data();
  meta.max_blocks_per_seq = blocks_per_seq;
  const std::vector<float> q = random_floats(static_cast<size_t>(num_seqs) * heads * head_dim, 3);
  std::vector<float> out(q.size());
  for (auto _ : state) {
    paged_attention(q.data(), heads, layer, meta, 0.125f, 0, 0.0f, out.data(), pool());
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = 2.0 * num_seqs * context * kv_heads * head_dim * static_cast<double>(dtype_size(dtype));
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The cost of one parallel op with nothing to do: what each of a decode
// step's many small ops pays for using both cores.
void BM_ThreadPoolEmptyOp(benchmark::State& state) {
  for (auto _ : state) pool().run([](int) {});
}

void register_benchmarks() {
  struct Shape {
    const char* name;
    int64_t m, n, k;
  };
  // smollm-135m's, qwen2.5-0.5b's and llama-3.2-1b's MLP shapes; m = 1 is decode.
  const Shape shapes[] = {{"smollm_up", 1, 1536, 576},
                          {"smollm_up", 512, 1536, 576},
                          {"qwen_up", 1, 4864, 896},
                          {"qwen_up", 512, 4864, 896},
                          {"llama1b_up", 1, 8192, 2048},
                          {"llama1b_up", 512, 8192, 2048},
                          {"llama1b_down", 1, 2048, 8192},
                          {"square", 1024, 1024, 1024},
                          // The rest of a 512-token prefill's layer: fused q/k/v, o, fused gate/up, down.
                          {"smollm_qkv", 512, 960, 576},
                          {"smollm_o", 512, 576, 576},
                          {"smollm_down", 512, 576, 1536},
                          {"qwen_down", 512, 896, 4864},
                          {"llama1b_qkv", 512, 3072, 2048},
                          {"llama1b_o", 512, 2048, 2048},
                          {"llama1b_gate_up", 512, 16384, 2048},
                          {"llama1b_down", 512, 2048, 8192}};
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    for (const Shape& s : shapes) {
      const std::string name = std::string("Linear/") + dtype_name(dtype) + "/" + s.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_Linear, dtype)
          ->Args({s.m, s.n, s.k})
          ->ArgNames({"m", "n", "k"})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  for (int bits : {4, 8}) {
    for (const Shape& s : shapes) {
      const std::string name = std::string("LinearQuantized/Q") + std::to_string(bits) + "/" + s.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_LinearQuantized, bits)
          ->Args({s.m, s.n, s.k})
          ->ArgNames({"m", "n", "k"})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  // llama-3.2-1b's tied LM head, Q6_K in its Q4_K_M GGUF, and its up
  // projection (Q4_K there, both types here).
  for (const KQuant& type : {kQ6K, kQ4K}) {
    for (const bool blocks : {true, false}) {
      for (const Shape& s : {Shape{"llama1b_head", 1, 128256, 2048}, Shape{"llama1b_up", 1, 8192, 2048},
                             Shape{"llama1b_up", 512, 8192, 2048}}) {
        const std::string name =
            std::string("Linear") + type.name + "/" + (blocks ? "blocks/" : "dequantized/") + s.name;
        benchmark::RegisterBenchmark(name.c_str(), BM_LinearKQuant, type, blocks)
            ->Args({s.m, s.n, s.k})
            ->ArgNames({"m", "n", "k"})
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
  for (const Shape& s : shapes) {
    const std::string name = std::string("LinearInt8/W8A8/") + s.name;
    benchmark::RegisterBenchmark(name.c_str(), BM_LinearInt8)
        ->Args({s.m, s.n, s.k})
        ->ArgNames({"m", "n", "k"})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  // Batch 2-4: also the rows a mixture's expert gets in a batch of 16 decoding
  // sequences; 2-8: a speculative verification of 1-7 drafts.
  benchmark::RegisterBenchmark("DecodeWeights/BF16/smollm", BM_DecodeWeightsSmollm)
      ->Arg(1)
      ->Arg(2)
      ->Arg(3)
      ->Arg(4)
      ->Arg(5)
      ->Arg(8)
      ->Arg(16)
      ->ArgName("batch")
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("DecodeWeights/Q4_K_M/llama1b", BM_DecodeWeightsLlama1bQ4KM)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const std::string name = std::string("PagedAttentionDecode/") + dtype_name(dtype);
    benchmark::RegisterBenchmark(name.c_str(), BM_PagedAttentionDecode, dtype)
        ->Args({1, 512})
        ->Args({16, 256})
        ->ArgNames({"seqs", "context"})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("ThreadPoolEmptyOp", BM_ThreadPoolEmptyOp)->Unit(benchmark::kMicrosecond)->UseRealTime();
}

}  // namespace
}  // namespace vllm::kernels

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      vllm::kernels::g_threads = std::atoi(argv[++i]);
      continue;
    }
    if (std::strcmp(argv[i], "--cpu-isa") == 0 && i + 1 < argc) {
      const vllm::Status forced = vllm::kernels::force_cpu_isa(argv[++i]);
      if (!forced.is_ok()) {
        std::fprintf(stderr, "error: %s\n", forced.message().c_str());
        return 2;
      }
      continue;
    }
    args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  vllm::kernels::g_limits = vllm::kernels::measure_machine_limits(vllm::kernels::pool());
  benchmark::AddCustomContext("threads", std::to_string(vllm::kernels::g_threads));
  benchmark::AddCustomContext("cpu_isa", vllm::kernels::cpu_isa());
  benchmark::AddCustomContext("bandwidth_gb_per_s", std::to_string(vllm::kernels::g_limits.bandwidth_gb_per_s));
  benchmark::AddCustomContext("peak_gflops", std::to_string(vllm::kernels::g_limits.peak_gflops));
  benchmark::AddCustomContext("peak_bf16_gflops", std::to_string(vllm::kernels::g_limits.peak_bf16_gflops));
  benchmark::AddCustomContext("peak_amx_bf16_gflops", std::to_string(vllm::kernels::g_limits.peak_amx_bf16_gflops));
  vllm::kernels::register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
