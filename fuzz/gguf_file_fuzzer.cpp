// GGUF files from outside: GgufFile::open either refuses the bytes or gives
// tensors that lie inside them; a model read from them either is refused or
// hands every tensor over (dequantized, rows reordered) without reading or
// writing out of bounds.  The bytes go through a file, as GGUF input does.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/loader/gguf_checkpoint.h"
#include "model/loader/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/gguf_file_fuzzer." + std::to_string(getpid()) + ".gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  vllm::Result<vllm::GgufFile> file = vllm::GgufFile::open(path);
  if (!file.is_ok()) return 0;
  std::vector<float> row;
  for (const vllm::GgufTensor& t : file->tensors()) {
    const int64_t elements = t.row_elements();
    // A tensor of no rows may still claim long ones ([0, 469762080]): it has no bytes to read.
    if (elements == 0 || t.bytes == 0) continue;
    const int64_t row_bytes = vllm::kernels::ggml_row_bytes(t.type, elements);
    row.resize(static_cast<size_t>(elements));
    // Every row the tensor's bytes hold: they were checked to lie in the file.
    for (uint64_t at = 0; row_bytes > 0 && at + static_cast<uint64_t>(row_bytes) <= t.bytes; at += row_bytes) {
      vllm::kernels::dequantize_ggml_row(t.type.type, t.data + at, row.data(), elements);
    }
  }
  (void)vllm::gguf_model_config(*file);
  vllm::Result<vllm::GgufCheckpoint> checkpoint = vllm::GgufCheckpoint::open(*file);
  if (!checkpoint.is_ok()) return 0;
  for (const std::string& name : checkpoint->names()) (void)checkpoint->get(name);
  return 0;
}
