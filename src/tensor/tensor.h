// Tensor: a non-owning, row-major view of typed memory (data, dtype, shape).
// Views are cheap to copy; whoever created the memory owns it (an mmap'd
// weight file, an AlignedBuffer in the model or the KV storage).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace vllm {

struct Tensor {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t size_bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }

  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
};

std::string shape_to_string(const std::vector<int64_t>& shape);

bool is_float_dtype(DType dtype);  // F32, BF16, F16
// A float tensor's values widened to float32 (exact), in order.
std::vector<float> widened_values(const Tensor& t);

}  // namespace vllm
