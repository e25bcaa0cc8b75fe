// Reading and writing the safetensors format: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw
// little-endian tensor bytes.  Files are memory-mapped; tensors are views,
// but for one whose bytes do not start at a multiple of its element size
// (the format does not require it: a 1-byte tensor ahead of others shifts
// them), which is copied to aligned memory so that it can be read as its type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/tensor.h"

namespace vllm {

class SafetensorsFile {
 public:
  // Maps the file and validates the whole header: every tensor's dtype,
  // shape and byte range must be consistent and inside the file.
  static Result<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }

 private:
  MappedFile file_;
  std::map<std::string, Tensor> tensors_;
  std::vector<AlignedBuffer> realigned_;  // the copies of misaligned tensors
};

// A tensor to be written: raw little-endian bytes of `dtype` with `shape`.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors);

}  // namespace vllm
