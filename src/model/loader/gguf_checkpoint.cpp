#include "model/loader/gguf_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernels/ggml_blocks.h"
#include "kernels/packed_matrix.h"
#include "model/loader/numbered_names.h"

namespace vllm {
namespace {

struct Architecture {
  const char* gguf_name;
  const char* hf_architecture;
  const char* model_type;
  bool interleaved_rotary_rows;  // llama.cpp's converter permutes q_proj and k_proj rows
};

constexpr Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", "llama", true},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", false},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", false},
};

// GGUF tensor names (after "blk.N.") and the Hugging Face ones (after
// "model.layers.N.").
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},      {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},      {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},          {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},           {"ffn_down.weight", "mlp.down_proj.weight"},
};
constexpr std::pair<const char*, const char*> kModelNames[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

const Architecture* find_architecture(const std::string& name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.gguf_name) return &a;
  }
  return nullptr;
}

// The Hugging Face name of a GGUF tensor name, or "" for one we do not use.
std::string hf_name(const std::string& gguf) {
  for (const auto& [from, to] : kModelNames) {
    if (gguf == from) return to;
  }
  if (!gguf.starts_with("blk.")) return "";
  const size_t dot = gguf.find('.', 4);
  if (dot == std::string::npos || dot == 4) return "";
  const std::string layer = gguf.substr(4, dot - 4);
  if (layer.find_first_not_of("0123456789") != std::string::npos) return "";
  const std::string rest = gguf.substr(dot + 1);
  for (const auto& [from, to] : kLayerNames) {
    if (rest == from) return "model.layers." + layer + "." + to;
  }
  return "";
}

// Reads metadata values of one architecture ("<arch>.<key>") into a config.
class MetadataReader {
 public:
  MetadataReader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  const GgufValue* find(const std::string& key) const { return file_.find(arch_ + "." + key); }

  Result<int64_t> integer(const std::string& key, std::optional<int64_t> fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return invalid_argument(file_.path() + ": GGUF metadata lacks " + arch_ + "." + key);
    }
    if (!v->is_integer() || v->as_int() < 0) {
      return invalid_argument(file_.path() + ": GGUF metadata " + arch_ + "." + key +
                              " must be a non-negative integer");
    }
    return v->as_int();
  }

  Result<double> number(const std::string& key, double fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->is_float()) return v->float_value;
    if (v->is_integer()) return static_cast<double>(v->as_int());
    return invalid_argument(file_.path() + ": GGUF metadata " + arch_ + "." + key + " must be a number");
  }

 private:
  const GgufFile& file_;
  std::string arch_;
};

std::string architecture_of(const GgufFile& file) {
  const GgufValue* v = file.find("general.architecture");
  return v != nullptr && v->type == GgufValue::Type::kString ? v->string : "";
}

// Rows of a [heads * head_dim, cols] matrix (or a [heads * head_dim] bias)
// put back in the checkpoint's order: of each head, the converter stored
// row 2 j + i where row i * head_dim / 2 + j was (i = 0, 1).
void undo_rotary_interleave(const uint8_t* from, uint8_t* to, int64_t heads, int64_t rows, size_t row_bytes) {
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < half; ++j) {
        const int64_t stored = h * head_dim + 2 * j + i, original = h * head_dim + i * half + j;
        std::memcpy(to + static_cast<size_t>(original) * row_bytes, from + static_cast<size_t>(stored) * row_bytes,
                    row_bytes);
      }
    }
  }
}

// llama.cpp's converter writes Llama 3's rotary scaling as a tensor of
// each frequency's divisor (rope_freqs.weight: theta_i / divisor_i), which
// is longrope's arithmetic with its short and long factors both those
// divisors and no attention scaling: so it is given as that.
Result<Json> frequency_divisors(const std::string& path, const GgufTensor& t, int64_t rotary_dim, const Json& context) {
  if (t.type.type != kernels::GgmlType::kF32 || t.shape != std::vector<int64_t>{rotary_dim / 2}) {
    return invalid_argument(path + ": GGUF tensor rope_freqs.weight must be F32 of " + std::to_string(rotary_dim / 2) +
                            " values (one per rotary frequency)");
  }
  Json divisors = Json::array();
  for (int64_t i = 0; i < rotary_dim / 2; ++i) {
    float v;
    std::memcpy(&v, t.data + 4 * i, 4);
    divisors.push_back(static_cast<double>(v));
  }
  Json scaling;
  scaling["rope_type"] = "longrope";
  scaling["short_factor"] = divisors;
  scaling["long_factor"] = divisors;
  scaling["original_max_position_embeddings"] = context;
  scaling["attention_factor"] = 1.0;
  return scaling;
}

bool is_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace

Result<std::string> find_gguf_file(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return is_gguf_file(path) ? path : std::string();
  if (std::filesystem::exists(std::filesystem::path(path) / "config.json", error)) return std::string();
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (entry.path().extension() == ".gguf" && is_gguf_file(entry.path().string())) {
      found.push_back(entry.path().string());
    }
  }
  if (found.size() <= 1) return found.empty() ? std::string() : found[0];
  // The splits of one model (PREFIX-0000K-of-0000N.gguf): the first.
  std::sort(found.begin(), found.end());
  const std::string& first = found.front();
  const size_t mark = first.rfind("-00001-of-");
  const std::string suffix = mark == std::string::npos ? "" : first.substr(mark + 10);  // "0000N.gguf"
  const bool one_model =
      mark != std::string::npos && std::all_of(found.begin(), found.end(), [&](const auto& f) {
        return f.size() == first.size() && f.compare(0, mark, first, 0, mark) == 0 && f.ends_with("-of-" + suffix);
      });
  if (!one_model) {
    return invalid_argument(path + ": holds " + std::to_string(found.size()) + " GGUF files; name the one to load");
  }
  return first;
}

Result<Json> gguf_model_config(const GgufFile& file) {
  const std::string arch_name = architecture_of(file);
  const Architecture* arch = find_architecture(arch_name);
  if (arch == nullptr) {
    return unimplemented(file.path() + ": GGUF architecture '" + arch_name +
                         "' is not supported (llama, qwen2 and qwen3 are)");
  }
  const MetadataReader m(file, arch_name);
  if (const GgufValue* scaling = m.find("rope.scaling.type");
      scaling != nullptr && !(scaling->type == GgufValue::Type::kString && scaling->string == "none")) {
    return unimplemented(file.path() + ": GGUF metadata " + arch_name + ".rope.scaling.type is not supported yet");
  }
  Json c;
  c["architectures"] = Json::array({arch->hf_architecture});
  c["model_type"] = arch->model_type;
  VLLM_ASSIGN_OR_RETURN(const int64_t hidden, m.integer("embedding_length", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(const int64_t heads, m.integer("attention.head_count", std::nullopt));
  c["hidden_size"] = hidden;
  VLLM_ASSIGN_OR_RETURN(c["intermediate_size"], m.integer("feed_forward_length", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(c["num_hidden_layers"], m.integer("block_count", std::nullopt));
  c["num_attention_heads"] = heads;
  VLLM_ASSIGN_OR_RETURN(c["num_key_value_heads"], m.integer("attention.head_count_kv", heads));
  VLLM_ASSIGN_OR_RETURN(c["max_position_embeddings"], m.integer("context_length", 2048));
  VLLM_ASSIGN_OR_RETURN(c["rms_norm_eps"], m.number("attention.layer_norm_rms_epsilon", 1e-6));
  VLLM_ASSIGN_OR_RETURN(c["rope_theta"], m.number("rope.freq_base", 10000.0));
  const int64_t default_head_dim = heads > 0 ? hidden / heads : 0;
  VLLM_ASSIGN_OR_RETURN(const int64_t head_dim, m.integer("attention.key_length", default_head_dim));
  VLLM_ASSIGN_OR_RETURN(const int64_t value_dim, m.integer("attention.value_length", head_dim));
  VLLM_ASSIGN_OR_RETURN(const int64_t rotary_dim, m.integer("rope.dimension_count", head_dim));
  if (value_dim != head_dim || rotary_dim != head_dim) {
    return unimplemented(file.path() + ": GGUF metadata gives keys of " + std::to_string(head_dim) +
                         " dimensions, values of " + std::to_string(value_dim) + " and a rotary part of " +
                         std::to_string(rotary_dim) + "; only equal ones are supported");
  }
  c["head_dim"] = head_dim;
  if (const GgufTensor* freqs = file.tensor("rope_freqs.weight"); freqs != nullptr) {
    VLLM_ASSIGN_OR_RETURN(c["rope_scaling"],
                          frequency_divisors(file.path(), *freqs, rotary_dim, c["max_position_embeddings"]));
  }
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  const int64_t listed = tokens != nullptr ? static_cast<int64_t>(tokens->elements.size()) : 0;
  VLLM_ASSIGN_OR_RETURN(c["vocab_size"],
                        m.integer("vocab_size", listed > 0 ? std::optional<int64_t>(listed) : std::nullopt));
  c["tie_word_embeddings"] = file.tensor("output.weight") == nullptr;
  for (const char* key : {"bos_token_id", "eos_token_id"}) {
    const GgufValue* id = file.find(std::string("tokenizer.ggml.") + key);
    if (id != nullptr && id->is_integer()) c[key] = id->as_int();
  }
  // The checkpoint dtype that "auto" choices (the KV cache's) follow: the
  // file's, by llama.cpp's file types ALL_F32 (0), MOSTLY_F16 (1) and
  // MOSTLY_BF16 (32); quantized weights are computed from FP32 values.
  const GgufValue* file_type = file.find("general.file_type");
  const int64_t ftype = file_type != nullptr && file_type->is_integer() ? file_type->as_int() : 0;
  c["torch_dtype"] = ftype == 1 ? "float16" : ftype == 32 ? "bfloat16" : "float32";
  return c;
}

Result<GgufCheckpoint> GgufCheckpoint::open(const GgufFile& file) {
  GgufCheckpoint ckpt;
  ckpt.file_ = &file;
  const Architecture* arch = find_architecture(architecture_of(file));
  const MetadataReader m(file, architecture_of(file));
  int64_t heads = 0, kv_heads = 0;
  if (arch != nullptr && arch->interleaved_rotary_rows) {
    VLLM_ASSIGN_OR_RETURN(heads, m.integer("attention.head_count", std::nullopt));
    VLLM_ASSIGN_OR_RETURN(kv_heads, m.integer("attention.head_count_kv", heads));
  }
  for (const GgufTensor& t : file.tensors()) {
    const kernels::GgmlType type = t.type.type;
    if (type != kernels::GgmlType::kF32 && type != kernels::GgmlType::kF16 && type != kernels::GgmlType::kBF16) {
      ckpt.widen_halves_ = true;
    }
  }
  for (const GgufTensor& t : file.tensors()) {
    const std::string name = hf_name(t.name);
    if (name.empty()) continue;
    int64_t rotary_heads = 0;
    if (name.ends_with("q_proj.weight") || name.ends_with("q_proj.bias")) rotary_heads = heads;
    if (name.ends_with("k_proj.weight") || name.ends_with("k_proj.bias")) rotary_heads = kv_heads;
    if (rotary_heads > 0 && (t.shape.empty() || t.shape[0] == 0 || t.shape[0] % (2 * rotary_heads) != 0)) {
      return invalid_argument(file.path() + ": tensor '" + t.name + "' has " +
                              std::to_string(t.shape.empty() ? 0 : t.shape[0]) + " rows, not whole heads of " +
                              std::to_string(rotary_heads));
    }
    ckpt.index_.emplace(name, Entry{&t, rotary_heads});
  }
  return ckpt;
}

std::vector<std::string> GgufCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : index_) out.push_back(name);
  return out;
}

int64_t GgufCheckpoint::count_numbered(const std::string& prefix) const { return count_numbered_keys(index_, prefix); }

Result<Tensor> GgufCheckpoint::get(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) return not_found(file_->path() + ": missing tensor '" + name + "'");
  const GgufTensor& t = *it->second.tensor;
  Tensor out;
  out.shape = t.shape;
  const kernels::GgmlType type = t.type.type;
  const bool half = type == kernels::GgmlType::kF16 || type == kernels::GgmlType::kBF16;
  const bool in_place = type == kernels::GgmlType::kF32 || (half && !widen_halves_);
  out.dtype = !in_place                          ? DType::kF32
              : type == kernels::GgmlType::kF16  ? DType::kF16
              : type == kernels::GgmlType::kBF16 ? DType::kBF16
                                                 : DType::kF32;
  if (in_place && it->second.rotary_heads == 0) {
    out.data = t.data;
    return out;
  }
  auto [slot, fresh] = converted_.try_emplace(name);
  std::vector<uint8_t>& bytes = slot->second;
  if (fresh) {
    const int64_t row = t.row_elements(), rows = out.numel() / std::max<int64_t>(row, 1);
    std::vector<uint8_t> values;
    if (in_place) {
      values.assign(t.data, t.data + t.bytes);
    } else {
      values.resize(static_cast<size_t>(out.numel()) * sizeof(float));
      auto* floats = reinterpret_cast<float*>(values.data());
      const int64_t row_bytes = kernels::ggml_row_bytes(t.type, row);
      for (int64_t r = 0; r < rows; ++r)
        kernels::dequantize_ggml_row(type, t.data + r * row_bytes, floats + r * row, row);
    }
    if (it->second.rotary_heads > 0 && !values.empty()) {  // rows of no columns have nothing to reorder
      bytes.resize(values.size());
      const int64_t leading = out.shape[0];
      undo_rotary_interleave(values.data(), bytes.data(), it->second.rotary_heads, leading, values.size() / leading);
    } else {
      bytes = std::move(values);
    }
  }
  out.data = bytes.data();
  return out;
}

Result<std::optional<kernels::GroupQuantized>> GgufCheckpoint::quantized(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) return not_found(file_->path() + ": missing tensor '" + name + "'");
  const GgufTensor& t = *it->second.tensor;
  const kernels::GgmlType type = t.type.type;
  if (kernels::ggml_group_size(type) == 0 || t.shape.size() != 2) return std::optional<kernels::GroupQuantized>();
  kernels::GroupQuantized q;
  q.rows = t.shape[0], q.cols = t.shape[1], q.group_size = kernels::ggml_group_size(type);
  const int64_t groups = q.cols / q.group_size, row_bytes = kernels::ggml_row_bytes(t.type, q.cols);
  q.codes.resize(static_cast<size_t>(q.rows * q.cols));
  q.scales.resize(static_cast<size_t>(q.rows * groups));
  const bool offsets = kernels::ggml_type_has_offsets(type);
  if (offsets) q.offsets.resize(q.scales.size());
  q.super_groups = kernels::ggml_super_groups(type);
  // llama.cpp computes every type against quantized activations (Q8_0
  // blocks; Q8_K, 256 wide, for the K-quants): ours are Q8_0's blocks of
  // 32, each type's groups of 32 or 16 within them.
  q.block_int8_activations = kernels::fits_activation_blocks(q.group_size);
  const int64_t supers = q.super_groups > 0 ? groups / q.super_groups : 0;
  if (q.super_groups > 0) {
    q.scale_bases.resize(static_cast<size_t>(q.rows * supers));
    q.scale_steps.resize(q.scales.size());
    if (offsets) q.offset_bases.resize(q.scale_bases.size()), q.offset_steps.resize(q.scales.size());
  }
  // Where row r's values of `v` begin (null for an empty vector).
  auto at = [](auto& v, int64_t r, int64_t per_row) { return v.empty() ? nullptr : v.data() + r * per_row; };
  for (int64_t r = 0; r < q.rows; ++r) {
    const kernels::GgmlSteps steps{at(q.scale_bases, r, supers), at(q.offset_bases, r, supers),
                                   at(q.scale_steps, r, groups), at(q.offset_steps, r, groups)};
    kernels::decode_ggml_row(type, t.data + r * row_bytes, q.cols, at(q.codes, r, q.cols), at(q.scales, r, groups),
                             at(q.offsets, r, groups), steps);
  }
  if (const int64_t heads = it->second.rotary_heads; heads > 0) {
    auto reorder = [&](auto& values, int64_t per_row) {
      auto stored = values;
      undo_rotary_interleave(reinterpret_cast<const uint8_t*>(stored.data()), reinterpret_cast<uint8_t*>(values.data()),
                             heads, q.rows, static_cast<size_t>(per_row) * sizeof(values[0]));
    };
    reorder(q.codes, q.cols);
    for (auto* per_row : {&q.scales, &q.offsets, &q.scale_bases, &q.offset_bases}) {
      if (!per_row->empty()) reorder(*per_row, static_cast<int64_t>(per_row->size()) / q.rows);
    }
    for (auto* steps : {&q.scale_steps, &q.offset_steps}) {
      if (!steps->empty()) reorder(*steps, groups);
    }
  }
  return std::optional<kernels::GroupQuantized>(std::move(q));
}

}  // namespace vllm
