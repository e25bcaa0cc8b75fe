#include "engine/runner/kv_cache_storage.h"

namespace vllm {

size_t KVCacheShape::bytes_per_block() const {
  size_t elements = 0;
  for (const LayerKVSpec& l : layers) {
    elements += 2ull * static_cast<size_t>(l.num_kv_heads) * static_cast<size_t>(l.head_dim);
  }
  return elements * static_cast<size_t>(block_size) * dtype_size(dtype);
}

KVCacheStorage::KVCacheStorage(const KVCacheShape& shape, int32_t num_blocks, bool resident) : num_blocks_(num_blocks) {
  for (const LayerKVSpec& spec : shape.layers) {
    const size_t layer_bytes = static_cast<size_t>(num_blocks) * static_cast<size_t>(spec.num_kv_heads) *
                               static_cast<size_t>(shape.block_size) * static_cast<size_t>(spec.head_dim) *
                               dtype_size(shape.dtype);
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
    layer.num_kv_heads = spec.num_kv_heads;
    layer.head_dim = spec.head_dim;
    view_.layers.push_back(layer);
  }
}

}  // namespace vllm
