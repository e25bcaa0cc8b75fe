#include "engine/runner/kv_cache_storage.h"

namespace vllm {

size_t KVCacheShape::bytes_per_block() const {
  return 2ull * static_cast<size_t>(num_layers) * static_cast<size_t>(num_kv_heads) * static_cast<size_t>(block_size) *
         static_cast<size_t>(head_dim) * dtype_size(dtype);
}

KVCacheStorage::KVCacheStorage(const KVCacheShape& shape, int32_t num_blocks, bool resident) : num_blocks_(num_blocks) {
  const size_t layer_bytes = static_cast<size_t>(num_blocks) * static_cast<size_t>(shape.num_kv_heads) *
                             static_cast<size_t>(shape.block_size) * static_cast<size_t>(shape.head_dim) *
                             dtype_size(shape.dtype);
  for (int32_t l = 0; l < shape.num_layers; ++l) {
    buffers_.emplace_back(layer_bytes);
    buffers_.emplace_back(layer_bytes);
    if (resident) {
      buffers_[buffers_.size() - 2].commit();
      buffers_.back().commit();
    }
    kernels::PagedKVLayer layer;
    layer.key_cache = buffers_[buffers_.size() - 2].data();
    layer.value_cache = buffers_.back().data();
    layer.dtype = shape.dtype;
    layer.num_blocks = num_blocks;
    layer.block_size = shape.block_size;
    layer.num_kv_heads = shape.num_kv_heads;
    layer.head_dim = shape.head_dim;
    view_.layers.push_back(layer);
  }
}

}  // namespace vllm
