#include "cli/test_model_presets.h"

#include <string_view>

#include "base/logging.h"

namespace vllm {
namespace {

struct ArchNames {
  const char* arch;
  const char* architecture;
  const char* model_type;
};

constexpr ArchNames kArchs[] = {
    {"llama", "LlamaForCausalLM", "llama"},
    {"mistral", "MistralForCausalLM", "mistral"},
    {"qwen2", "Qwen2ForCausalLM", "qwen2"},
    {"qwen3", "Qwen3ForCausalLM", "qwen3"},
    {"gemma2", "Gemma2ForCausalLM", "gemma2"},
    {"gemma3", "Gemma3ForCausalLM", "gemma3_text"},
    {"phi3", "Phi3ForCausalLM", "phi3"},
    {"granite", "GraniteForCausalLM", "granite"},
    {"stablelm", "StableLmForCausalLM", "stablelm"},
    {"mixtral", "MixtralForCausalLM", "mixtral"},
    {"qwen2_moe", "Qwen2MoeForCausalLM", "qwen2_moe"},
    {"qwen3_moe", "Qwen3MoeForCausalLM", "qwen3_moe"},
    {"olmoe", "OlmoeForCausalLM", "olmoe"},
    {"deepseek_v2", "DeepseekV2ForCausalLM", "deepseek_v2"},
    {"deepseek_v3", "DeepseekV3ForCausalLM", "deepseek_v3"},
};

const ArchNames& arch_named(std::string_view arch) {
  for (const ArchNames& a : kArchs) {
    if (arch == a.arch) return a;
  }
  VLLM_CHECK(false, "a preset names an architecture of kArchs");
  return kArchs[0];
}

// n numbers from `first` by `step` (LongRoPE's per-frequency factors).
Json ramp(int n, double first, double step) {
  Json out = Json::array();
  for (int i = 0; i < n; ++i) out.push_back(first + step * i);
  return out;
}

Json base_config(const ArchNames& a) {
  const bool gemma = std::string(a.arch).starts_with("gemma");
  return Json{{"architectures", {a.architecture}},
              {"model_type", a.model_type},
              {gemma ? "hidden_activation" : "hidden_act", gemma ? "gelu_pytorch_tanh" : "silu"},
              {"bos_token_id", 1},
              {"eos_token_id", 2}};
}

// Tiny shapes: 2 layers, hidden 64, GQA, vocab 512 (the stories260k
// tokenizer).  Each architecture also switches on the options it is known
// for, so the reference test covers them: llama3 rope scaling and attention
// biases, Mistral's sliding window (with dynamic NTK scaling past a
// 32-token context, served to 256), Qwen2's q/k/v biases with MQA, Qwen3's
// q/k norms with an explicit head_dim, linear rope scaling and an untied lm_head.
Json tiny_config(const ArchNames& a) {
  Json c = base_config(a);
  c.update(Json{{"hidden_size", 64},
                {"intermediate_size", 128},
                {"num_hidden_layers", 2},
                {"num_attention_heads", 4},
                {"num_key_value_heads", 2},
                {"vocab_size", 512},
                {"max_position_embeddings", 256},
                {"rms_norm_eps", 1e-5},
                {"rope_theta", 10000.0},
                {"tie_word_embeddings", true}});
  const std::string arch = a.arch;
  if (arch == "llama") {
    c["attention_bias"] = true;
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 64}};
  } else if (arch == "mistral") {
    c["sliding_window"] = 16;
    c["tie_word_embeddings"] = false;
    c["max_position_embeddings"] = 32;
    c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 8.0}};
  } else if (arch == "qwen2") {
    c["num_key_value_heads"] = 1;
    c["rope_theta"] = 1000000.0;
    c["use_sliding_window"] = false;
    c["sliding_window"] = 256;
  } else if (arch == "qwen3") {
    c["head_dim"] = 32;
    c["attention_bias"] = false;
    c["rms_norm_eps"] = 1e-6;
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
    c["tie_word_embeddings"] = false;
  } else if (arch == "gemma2") {
    // Sliding (window 16 < 64 positions) and global layers alternating,
    // heads * head_dim != hidden, query_pre_attn_scalar != head_dim, and
    // soft-caps small enough to bend this random model's scores and logits.
    c.update(Json{{"num_hidden_layers", 3},
                  {"head_dim", 24},
                  {"query_pre_attn_scalar", 32},
                  {"sliding_window", 16},
                  {"attn_logit_softcapping", 0.05},
                  {"final_logit_softcapping", 0.3},
                  {"rms_norm_eps", 1e-6}});
  } else if (arch == "gemma3") {
    // Explicit layer types (sliding, global, sliding), a local rope base
    // for the sliding layers and linear scaling on the global one, per-head
    // q/k norms, an untied lm_head.
    c.update(Json{{"num_hidden_layers", 3},
                  {"num_key_value_heads", 1},
                  {"head_dim", 32},
                  {"query_pre_attn_scalar", 48},
                  {"sliding_window", 8},
                  {"layer_types", {"sliding_attention", "full_attention", "sliding_attention"}},
                  {"rope_theta", 1000000.0},
                  {"rope_local_base_freq", 10000.0},
                  {"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}},
                  {"final_logit_softcapping", nullptr},
                  {"attn_logit_softcapping", nullptr},
                  {"tie_word_embeddings", false},
                  {"rms_norm_eps", 1e-6}});
  } else if (arch == "phi3") {
    // LongRoPE past a 32-token original context (so the long factors and
    // the attention factor apply), rotary over 12 of 16 dimensions
    // (Phi-4-mini's partial_rotary_factor), fused checkpoints, a window.
    c.update(Json{{"original_max_position_embeddings", 32},
                  {"partial_rotary_factor", 0.75},
                  {"sliding_window", 48},
                  {"rope_scaling",
                   {{"type", "longrope"}, {"short_factor", ramp(6, 1.0, 0.1)}, {"long_factor", ramp(6, 1.5, 2.0)}}},
                  {"tie_word_embeddings", false}});
  } else if (arch == "stablelm") {
    // LayerNorms with biases (layer_norm_eps, no rms_norm_eps), q/k/v
    // biases, rotary over a quarter of each head (StableLM-2-1.6B's shape).
    c.erase("rms_norm_eps");
    c.update(Json{{"layer_norm_eps", 1e-5},
                  {"use_qkv_bias", true},
                  {"partial_rotary_factor", 0.25},
                  {"qk_layernorm", false},
                  {"use_parallel_residual", false},
                  {"tie_word_embeddings", false}});
  } else if (arch == "granite") {
    // The four multipliers, YaRN past a 16-token original context, biases.
    c.update(
        Json{{"embedding_multiplier", 12.0},
             {"attention_multiplier", 0.2},
             {"residual_multiplier", 0.22},
             {"logits_scaling", 4.0},
             {"attention_bias", true},
             {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 16}}}});
  } else if (arch == "mixtral") {
    // 4 experts of 48, top 2, always renormalised.
    c.update(Json{{"num_local_experts", 4}, {"num_experts_per_tok", 2}, {"intermediate_size", 48}});
  } else if (arch == "qwen2_moe") {
    // Sparse, dense (mlp_only_layers), sparse; 8 experts of 32, top 4 not
    // renormalised, a gated shared expert; q/k/v biases.
    c.update(Json{{"num_hidden_layers", 3},
                  {"num_experts", 8},
                  {"num_experts_per_tok", 4},
                  {"norm_topk_prob", false},
                  {"moe_intermediate_size", 32},
                  {"shared_expert_intermediate_size", 96},
                  {"mlp_only_layers", {1}},
                  {"use_sliding_window", false},
                  {"rope_theta", 1000000.0}});
  } else if (arch == "qwen3_moe") {
    // Dense then sparse (decoder_sparse_step 2), 8 experts of 48, top 3
    // renormalised, per-head q/k norms, head_dim != hidden / heads.
    c.update(Json{{"num_experts", 8},
                  {"num_experts_per_tok", 3},
                  {"norm_topk_prob", true},
                  {"moe_intermediate_size", 48},
                  {"decoder_sparse_step", 2},
                  {"head_dim", 32},
                  {"use_sliding_window", false},
                  {"tie_word_embeddings", false}});
  } else if (arch == "olmoe") {
    // 8 experts of 32, top 2 not renormalised, q/k norms over the whole
    // projections, attention biases.
    c.update(Json{{"num_experts", 8},
                  {"num_experts_per_tok", 2},
                  {"norm_topk_prob", false},
                  {"intermediate_size", 32},
                  {"attention_bias", true},
                  {"clip_qkv", nullptr},
                  {"tie_word_embeddings", false}});
  } else if (arch.starts_with("deepseek")) {
    // Latent attention with YaRN past a 16-token original context (mscale
    // and mscale_all_dim both in play), a dense layer then two mixtures of
    // 8 experts in 4 groups with shared experts.  V2: q_proj (q_lora_rank
    // null), softmax, group-limited greedy top 3, scaled weights; V3:
    // q_lora_rank set, v_head_dim != qk_nope_head_dim, the noaux_tc sigmoid
    // router renormalised and scaled, one MTP layer in the config.
    const bool v3 = arch == "deepseek_v3";
    c.update(Json{{"num_hidden_layers", 3},
                  {"num_key_value_heads", 4},
                  {"intermediate_size", 96},
                  {"rms_norm_eps", 1e-6},
                  {"max_position_embeddings", 256},
                  {"q_lora_rank", v3 ? Json(24) : Json(nullptr)},
                  {"kv_lora_rank", 32},
                  {"qk_nope_head_dim", 16},
                  {"qk_rope_head_dim", 8},
                  {"v_head_dim", v3 ? 24 : 16},
                  {"n_routed_experts", 8},
                  {"n_shared_experts", v3 ? 1 : 2},
                  {"moe_intermediate_size", 16},
                  {"num_experts_per_tok", 3},
                  {"n_group", 4},
                  {"topk_group", 2},
                  {"routed_scaling_factor", v3 ? 2.5 : 1.5},
                  {"norm_topk_prob", v3},
                  {"first_k_dense_replace", 1},
                  {"moe_layer_freq", 1},
                  {"tie_word_embeddings", false},
                  {"rope_scaling",
                   {{"type", "yarn"},
                    {"factor", 16.0},  // = max_position_embeddings / original, as transformers recomputes it
                    {"original_max_position_embeddings", 16},
                    {"beta_fast", 32},
                    {"beta_slow", 1},
                    {"mscale", v3 ? 1.0 : 0.9},
                    {"mscale_all_dim", v3 ? 1.0 : 0.707}}}});
    if (v3) {
      c.update(Json{{"num_nextn_predict_layers", 1}, {"rope_interleave", true}});
    } else {
      c.update(Json{{"topk_method", "group_limited_greedy"}, {"scoring_func", "softmax"}});
    }
  }
  return c;
}

Json real_config(const std::string& preset) {
  if (preset == "smollm-135m") {
    Json c = base_config(arch_named("llama"));
    c.update(Json{{"hidden_size", 576},
                  {"intermediate_size", 1536},
                  {"num_hidden_layers", 30},
                  {"num_attention_heads", 9},
                  {"num_key_value_heads", 3},
                  {"head_dim", 64},
                  {"vocab_size", 49152},
                  {"max_position_embeddings", 2048},
                  {"rms_norm_eps", 1e-5},
                  {"rope_theta", 10000.0},
                  {"tie_word_embeddings", true},
                  {"attention_bias", false}});
    return c;
  }
  if (preset == "qwen2.5-0.5b") {
    Json c = base_config(arch_named("qwen2"));
    c.update(Json{{"hidden_size", 896},
                  {"intermediate_size", 4864},
                  {"num_hidden_layers", 24},
                  {"num_attention_heads", 14},
                  {"num_key_value_heads", 2},
                  {"vocab_size", 151936},
                  {"max_position_embeddings", 32768},
                  {"rms_norm_eps", 1e-6},
                  {"rope_theta", 1000000.0},
                  {"tie_word_embeddings", true},
                  {"use_sliding_window", false},
                  {"sliding_window", 32768}});
    return c;
  }
  if (preset == "llama-3.2-1b") {
    Json c = base_config(arch_named("llama"));
    c.update(Json{{"hidden_size", 2048},
                  {"intermediate_size", 8192},
                  {"num_hidden_layers", 16},
                  {"num_attention_heads", 32},
                  {"num_key_value_heads", 8},
                  {"head_dim", 64},
                  {"vocab_size", 128256},
                  {"max_position_embeddings", 131072},
                  {"rms_norm_eps", 1e-5},
                  {"rope_theta", 500000.0},
                  {"tie_word_embeddings", true},
                  {"attention_bias", false},
                  {"rope_scaling",
                   {{"rope_type", "llama3"},
                    {"factor", 32.0},
                    {"low_freq_factor", 1.0},
                    {"high_freq_factor", 4.0},
                    {"original_max_position_embeddings", 8192}}}});
    return c;
  }
  if (preset == "gemma-2-2b") {  // google/gemma-2-2b's config.json
    Json c = base_config(arch_named("gemma2"));
    c.update(Json{{"hidden_size", 2304},
                  {"intermediate_size", 9216},
                  {"num_hidden_layers", 26},
                  {"num_attention_heads", 8},
                  {"num_key_value_heads", 4},
                  {"head_dim", 256},
                  {"vocab_size", 256000},
                  {"max_position_embeddings", 8192},
                  {"rms_norm_eps", 1e-6},
                  {"rope_theta", 10000.0},
                  {"query_pre_attn_scalar", 256},
                  {"sliding_window", 4096},
                  {"attn_logit_softcapping", 50.0},
                  {"final_logit_softcapping", 30.0},
                  {"tie_word_embeddings", true},
                  {"attention_bias", false},
                  {"bos_token_id", 2},
                  {"eos_token_id", 1}});
    return c;
  }
  if (preset == "phi-3-mini") {  // microsoft/Phi-3-mini-4k-instruct's config.json
    Json c = base_config(arch_named("phi3"));
    c.update(Json{{"hidden_size", 3072},
                  {"intermediate_size", 8192},
                  {"num_hidden_layers", 32},
                  {"num_attention_heads", 32},
                  {"num_key_value_heads", 32},
                  {"vocab_size", 32064},
                  {"max_position_embeddings", 4096},
                  {"original_max_position_embeddings", 4096},
                  {"sliding_window", 2047},
                  {"rms_norm_eps", 1e-5},
                  {"rope_theta", 10000.0},
                  {"tie_word_embeddings", false},
                  {"bos_token_id", 1},
                  {"eos_token_id", 32000}});
    return c;
  }
  if (preset == "olmoe-1b-7b") {  // allenai/OLMoE-1B-7B-0924's config.json
    Json c = base_config(arch_named("olmoe"));
    c.update(Json{{"hidden_size", 2048},
                  {"intermediate_size", 1024},
                  {"num_hidden_layers", 16},
                  {"num_attention_heads", 16},
                  {"num_key_value_heads", 16},
                  {"num_experts", 64},
                  {"num_experts_per_tok", 8},
                  {"norm_topk_prob", false},
                  {"vocab_size", 50304},
                  {"max_position_embeddings", 4096},
                  {"rope_theta", 10000.0},
                  {"rms_norm_eps", 1e-5},
                  {"clip_qkv", nullptr},
                  {"attention_bias", false},
                  {"tie_word_embeddings", false},
                  {"bos_token_id", 50279},
                  {"eos_token_id", 50279}});
    return c;
  }
  if (preset == "deepseek-v2-lite") {
    // deepseek-ai/DeepSeek-V2-Lite's config.json with 12 of its 27 layers
    // (all 27 in BF16 are 31 GB): a dense layer, then 11 of 64 experts top 6 plus 2 shared.
    Json c = base_config(arch_named("deepseek_v2"));
    c.update(Json{{"hidden_size", 2048},
                  {"intermediate_size", 10944},
                  {"moe_intermediate_size", 1408},
                  {"num_hidden_layers", 12},
                  {"num_attention_heads", 16},
                  {"num_key_value_heads", 16},
                  {"n_shared_experts", 2},
                  {"n_routed_experts", 64},
                  {"num_experts_per_tok", 6},
                  {"routed_scaling_factor", 1.0},
                  {"topk_method", "greedy"},
                  {"n_group", 1},
                  {"topk_group", 1},
                  {"scoring_func", "softmax"},
                  {"norm_topk_prob", false},
                  {"first_k_dense_replace", 1},
                  {"moe_layer_freq", 1},
                  {"kv_lora_rank", 512},
                  {"q_lora_rank", nullptr},
                  {"qk_nope_head_dim", 128},
                  {"qk_rope_head_dim", 64},
                  {"v_head_dim", 128},
                  {"vocab_size", 102400},
                  {"max_position_embeddings", 163840},
                  {"rope_theta", 10000.0},
                  {"rope_scaling",
                   {{"type", "yarn"},
                    {"factor", 40},
                    {"original_max_position_embeddings", 4096},
                    {"beta_fast", 32},
                    {"beta_slow", 1},
                    {"mscale", 0.707},
                    {"mscale_all_dim", 0.707}}},
                  {"rms_norm_eps", 1e-6},
                  {"attention_bias", false},
                  {"tie_word_embeddings", false},
                  {"bos_token_id", 100000},
                  {"eos_token_id", 100001}});
    return c;
  }
  if (preset == "qwen3-0.6b") {
    Json c = base_config(arch_named("qwen3"));
    c.update(Json{{"hidden_size", 1024},
                  {"intermediate_size", 3072},
                  {"num_hidden_layers", 28},
                  {"num_attention_heads", 16},
                  {"num_key_value_heads", 8},
                  {"head_dim", 128},
                  {"vocab_size", 151936},
                  {"max_position_embeddings", 40960},
                  {"rms_norm_eps", 1e-6},
                  {"rope_theta", 1000000.0},
                  {"tie_word_embeddings", true},
                  {"attention_bias", false}});
    return c;
  }
  return Json();
}

const char* preset_arch(const std::string& preset) {
  if (preset == "smollm-135m" || preset == "llama-3.2-1b") return "llama";
  if (preset == "qwen2.5-0.5b") return "qwen2";
  if (preset == "qwen3-0.6b") return "qwen3";
  if (preset == "gemma-2-2b") return "gemma2";
  if (preset == "phi-3-mini") return "phi3";
  if (preset == "olmoe-1b-7b") return "olmoe";
  if (preset == "deepseek-v2-lite") return "deepseek_v2";
  return nullptr;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::vector<std::string> test_model_preset_names() {
  return {"tiny",       "smollm-135m", "qwen2.5-0.5b", "llama-3.2-1b",    "qwen3-0.6b",
          "gemma-2-2b", "phi-3-mini",  "olmoe-1b-7b",  "deepseek-v2-lite"};
}

std::vector<std::string> test_model_arch_names() {
  std::vector<std::string> out;
  for (const ArchNames& a : kArchs) out.emplace_back(a.arch);
  return out;
}

Result<TestModelPreset> find_test_model_preset(const std::string& preset, const std::optional<std::string>& arch) {
  if (preset == "tiny") {
    if (!arch) return invalid_argument("--preset tiny needs --arch (" + join(test_model_arch_names()) + ")");
    for (const ArchNames& a : kArchs) {
      if (*arch == a.arch) return TestModelPreset{preset, a.arch, tiny_config(a)};
    }
    return invalid_argument("unknown --arch '" + *arch + "'; choose one of: " + join(test_model_arch_names()));
  }
  const char* own_arch = preset_arch(preset);
  if (own_arch == nullptr) {
    return invalid_argument("unknown --preset '" + preset + "'; choose one of: " + join(test_model_preset_names()));
  }
  if (arch && *arch != own_arch) {
    return invalid_argument("--preset " + preset + " is a " + own_arch + " model, not --arch " + *arch);
  }
  return TestModelPreset{preset, own_arch, real_config(preset)};
}

}  // namespace vllm
