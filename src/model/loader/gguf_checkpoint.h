// A GGUF file as a model: its metadata read as the Hugging Face config.json
// the architectures already parse, and its tensors under the Hugging Face
// names they ask for (GgufCheckpoint).  Architectures never see GGUF.
//
// What llama.cpp's converter changed is undone here: tensor names
// ("blk.3.attn_q.weight" is "model.layers.3.self_attn.q_proj.weight"), the
// shapes' order (GGUF lists the fastest dimension first), and for the llama
// architecture the rows of q_proj and k_proj, which it stores per head with
// the two rotary halves interleaved.  Quantized tensors are dequantized to
// FP32 when asked for (exactly as ggml does); F32, F16 and BF16 ones are
// read in place (F16 and BF16 widened to FP32 in a file that also holds
// quantized ones).  quantized() gives a quantized tensor in its group form
// instead (kernels/ggml_blocks.h), for the kernels to compute on as stored.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "model/loader/gguf_file.h"
#include "model/loader/weight_source.h"

namespace vllm {

// The GGUF file `path` names: itself (by its first four bytes), or the one
// .gguf file (or the first of one model's splits) of a directory without a
// config.json; "" when it names no GGUF, an error when such a directory
// holds several models.
Result<std::string> find_gguf_file(const std::string& path);

// The config.json equivalent of the file's metadata, for the architectures
// llama.cpp and we share (general.architecture llama, qwen2, qwen3); any
// other, or a metadata key we cannot honour, is an error naming it.
Result<Json> gguf_model_config(const GgufFile& file);

class GgufCheckpoint : public WeightSource {
 public:
  // `file` must outlive the checkpoint.
  static Result<GgufCheckpoint> open(const GgufFile& file);

  bool has(const std::string& name) const override { return index_.count(name) != 0; }
  int64_t count_numbered(const std::string& prefix) const override;
  Result<Tensor> get(const std::string& name) const override;
  Result<std::optional<kernels::GroupQuantized>> quantized(const std::string& name) const override;
  const std::string& source() const override { return file_->path(); }
  // The Hugging Face names of the tensors it has, sorted.
  std::vector<std::string> names() const;

 private:
  struct Entry {
    const GgufTensor* tensor;
    int64_t rotary_heads;  // q_proj / k_proj of llama: heads whose rows to put back in order, else 0
  };

  const GgufFile* file_ = nullptr;
  // With quantized tensors (given as FP32), F16 and BF16 ones are widened
  // too: layers stack matrices of one dtype (q, k and v; gate and up), and
  // a quantized file mixes types among them.
  bool widen_halves_ = false;
  std::map<std::string, Entry> index_;
  // Tensors converted when asked for, kept until the checkpoint goes.
  mutable std::map<std::string, std::vector<uint8_t>> converted_;
};

}  // namespace vllm
