#include "engine/runner/kv_cache_storage.h"

namespace vllm {

size_t KVCacheShape::bytes_per_block() const {
  size_t elements = 0;
  for (const LayerKVSpec& l : layers) elements += static_cast<size_t>(l.elements_per_token());
  return elements * static_cast<size_t>(block_size) * dtype_size(dtype);
}

KVCacheStorage::KVCacheStorage(const KVCacheShape& shape, int32_t num_blocks, bool resident) : num_blocks_(num_blocks) {
  for (const LayerKVSpec& spec : shape.layers) {
    const size_t pool_bytes = static_cast<size_t>(num_blocks) * static_cast<size_t>(spec.num_kv_heads) *
                              static_cast<size_t>(shape.block_size) * static_cast<size_t>(spec.head_dim) *
                              dtype_size(shape.dtype);
    kernels::PagedKVLayer layer;
    // Keys, then values (a latent layer's rows are both).
    for (int pool = 0; pool < (spec.latent ? 1 : 2); ++pool) {
      AlignedBuffer& buffer = buffers_.emplace_back(pool_bytes);
      if (resident) buffer.commit();
      (pool == 0 ? layer.key_cache : layer.value_cache) = buffer.data();
    }
    layer.dtype = shape.dtype;
    layer.num_blocks = num_blocks;
    layer.block_size = shape.block_size;
    layer.num_kv_heads = spec.num_kv_heads;
    layer.head_dim = spec.head_dim;
    view_.layers.push_back(layer);
  }
}

}  // namespace vllm
