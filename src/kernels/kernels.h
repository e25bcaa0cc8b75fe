// Kernel entry points: one function per op. Activations are float32, row-major,
// passed as raw pointers with their shapes in comments; weight matrices are
// packed once at load (packed_matrix.h) and stay in their stored dtype (F32,
// BF16 or F16), widened to float32 in registers. Kernels know nothing of
// requests or models.
//
// Every output element is computed by the same sequence of operations however
// many rows are in the batch, so results do not depend on batch composition.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "tensor/tensor.h"

namespace vllm::kernels {

// The instruction set in use ("amx", "avx512_bf16", "avx512", "avx2" or "scalar"):
// the fastest this CPU has unless force_cpu_isa chose another.
std::string cpu_isa();
// "auto" or one of the names above; an error names what the CPU supports.
// Call before any kernel runs and any weight is packed (BF16 weights are
// packed in the layout of the ISA active then: packed_layout).
Status force_cpu_isa(const std::string& name);

// y[m, n] = sum_k x[m, k] * w[n, k] + bias[n].  x: [m, K]; w: [N, K]; bias: [N] or null; y: [m, N].
void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool);

// Several independent products y_i = x_i W_i^T (no bias) in one parallel
// region, their panels shared out among the threads together: a mixture of
// experts' small per-expert GEMMs pay one fork and join instead of one each,
// and each y_i is what linear() gives for it.
struct LinearProblem {
  const float* x;  // [m, w->cols]
  int64_t m;
  const PackedMatrix* w;
  float* y;  // [m, w->rows]
  // Called once y is whole, in the same parallel region, by the thread that
  // computed y's last panels: work that needs y and nothing else of the
  // region (a LoRA shrink's expand) pays no fork and join of its own.  It
  // runs on one thread: what it computes goes through ThreadPool::caller_only().
  const std::function<void()>* then = nullptr;
};
void linear_group(const std::vector<LinearProblem>& problems, ThreadPool& pool);

// linear(), with the independent products `alongside` (and their `then`s) in
// the same parallel region: a Linear and its LoRA adapters' products fork and
// join once.  y is what linear() alone gives.
void linear(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y, ThreadPool& pool,
            const std::vector<LinearProblem>& alongside);

// out[t, :] = table[ids[t], :] widened to float32.  table: [V, H]; out: [num_tokens, H].
void embedding(const PackedMatrix& table, const int32_t* ids, int64_t num_tokens, float* out);

// The element-wise ops below split their rows over the pool when there are
// enough of them to pay for it; a row's arithmetic is the same either way.

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight.  x, y: [rows, n] (may alias); weight: [n].
void rms_norm(const float* x, int64_t rows, int64_t n, const float* weight, float eps, float* y, ThreadPool& pool);

// residual += delta, then y = rms_norm(residual): a layer's residual add and
// the next norm in one pass.  residual, delta, y: [rows, n].
void fused_add_rms_norm(float* residual, const float* delta, int64_t rows, int64_t n, const float* weight, float eps,
                        float* y, ThreadPool& pool);

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias, var the
// mean squared deviation (torch's LayerNorm).  x, y: [rows, n] (may alias);
// weight, bias: [n].
void layer_norm(const float* x, int64_t rows, int64_t n, const float* weight, const float* bias, float eps, float* y,
                ThreadPool& pool);

// residual += delta, then y = layer_norm(residual).  residual, delta, y: [rows, n].
void fused_add_layer_norm(float* residual, const float* delta, int64_t rows, int64_t n, const float* weight,
                          const float* bias, float eps, float* y, ThreadPool& pool);

// Which dimensions of a head a rotary frequency i turns together: i and
// i + rotary_dim / 2 (rotate-half, "neox": Llama and most others), or 2i
// and 2i + 1 (interleaved pairs, "gptj": DeepSeek's MLA checkpoints).
enum class RopeLayout { kHalfSplit, kInterleaved };

// Rotary embedding, in place, over the leading rotary_dim dimensions of
// each head (the rest pass through).  x: [num_tokens, num_heads, head_dim],
// rows num_heads * head_dim apart; cos, sin: [num_tokens, rotary_dim / 2].
void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t rotary_dim, const float* cos,
          const float* sin, ThreadPool& pool, RopeLayout layout = RopeLayout::kHalfSplit);

// out[t, i] = silu(gate_up[t, i]) * gate_up[t, n + i] (SwiGLU over the stacked
// gate and up projections, as vLLM's SiluAndMul).  gate_up: [num_tokens, 2 * n];
// out: [num_tokens, n].
void silu_and_mul(const float* gate_up, int64_t num_tokens, int64_t n, float* out, ThreadPool& pool);
// The same with GELU's tanh approximation (GeGLU, as vLLM's GeluAndMul(approximate="tanh")).
void gelu_tanh_and_mul(const float* gate_up, int64_t num_tokens, int64_t n, float* out, ThreadPool& pool);

// out[i] = e^(x[i] - shift), for x[i] - shift <= 87 (a softmax's or a
// log-sum-exp's terms).  x, out: [n] (may alias).
void exp_shifted(const float* x, int64_t n, float shift, float* out);

// One layer of the paged KV cache.  Per block and KV head, the keys are
// stored transposed, [head_dim, block_size], so that scores over consecutive
// keys are vectors; the values are [block_size, head_dim].  Both caches:
// [num_blocks, num_kv_heads, block_size * head_dim] of `dtype`: F32; BF16
// (keys and values rounded to nearest even when written, widened exactly
// when read: half the memory and half the bytes each decode step reads); or
// FP8 E4M3 (a quarter, scaled by KVScales below; --kv-cache-dtype fp8).
struct PagedKVLayer {
  void* key_cache = nullptr;    // a latent layer's rows
  void* value_cache = nullptr;  // none for a latent layer
  DType dtype = DType::kF32;
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
};

// Where each sequence of a flattened batch sits.  Sequence s owns query rows
// [query_start_loc[s], query_start_loc[s+1]) and, after this step, has
// seq_lens[s] tokens in the cache; its query rows are the last ones of those.
struct AttentionMetadata {
  int32_t num_seqs = 0;
  const int32_t* query_start_loc = nullptr;  // [num_seqs + 1]
  const int32_t* seq_lens = nullptr;         // [num_seqs]
  const int32_t* block_tables = nullptr;     // [num_seqs, max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;
  const int32_t* slot_mapping = nullptr;  // [num_tokens]: block * block_size + offset
};

// An FP8 KV cache's per-tensor scales (vLLM's k_scale and v_scale, from the
// checkpoint or 1): it holds e4m3(x / scale) and reads code * scale.  Other
// dtypes ignore them.
struct KVScales {
  float key = 1.0f;
  float value = 1.0f;
};

// Stores this step's keys and values in their slots.  k, v: [num_tokens, num_kv_heads, head_dim].
void write_kv_cache(const float* k, const float* v, const int32_t* slot_mapping, int64_t num_tokens,
                    const PagedKVLayer& layer, const KVScales& scales = {});

// Multi-head latent attention (DeepSeek's MLA with its up-projections
// absorbed): a latent layer caches one row of layer.head_dim per token,
// shared by every head as its key, whose first value_dim entries are also
// its value.  Rows are stored in order, [num_blocks, block_size, head_dim].
// rows: [num_tokens, head_dim].
// An FP8 cache holds e4m3(x / scale) and reads code * scale, as KVScales' key.
void write_latent_cache(const float* rows, const int32_t* slot_mapping, int64_t num_tokens, const PagedKVLayer& layer,
                        float scale = 1.0f);
// Causal attention of every head of every query row over its sequence's
// cached rows: scores q.row * scale, out = softmax-weighted sum of the rows'
// first value_dim entries.  q: [num_tokens, num_heads, head_dim];
// out: [num_tokens, num_heads, value_dim].
void latent_attention(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                      float scale, int32_t value_dim, float* out, ThreadPool& pool, float cache_scale = 1.0f);

// Causal attention of every query row over its sequence's cached keys and
// values, read through the block table: a query at position i sees the keys
// j with 0 <= i - j < sliding_window (sliding_window <= 0: all j <= i).
// Scores are q.k * scale, then softcap * tanh(score / softcap) when softcap > 0.
// q, out: [num_tokens, num_heads, head_dim].
void paged_attention(const float* q, int32_t num_heads, const PagedKVLayer& layer, const AttentionMetadata& meta,
                     float scale, int32_t sliding_window, float softcap, float* out, ThreadPool& pool,
                     const KVScales& scales = {});

}  // namespace vllm::kernels
