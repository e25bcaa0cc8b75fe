// The memory of the paged KV cache: per layer, one key and one value pool of
// [num_blocks, num_kv_heads, block_size, head_dim] elements of `dtype` (a
// latent layer: one pool of rows), each layer as the model's
// kv_cache_spec() describes it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace vllm {

struct KVCacheShape {
  std::vector<LayerKVSpec> layers;
  int32_t block_size = 16;
  DType dtype = DType::kF32;  // F32 or BF16

  size_t bytes_per_block() const;  // all layers, keys and values
};

class KVCacheStorage {
 public:
  // `resident`: every page committed now (a server's pool, whose memory must
  // be there before load comes); otherwise pages are taken as blocks are first used.
  KVCacheStorage(const KVCacheShape& shape, int32_t num_blocks, bool resident = false);

  const KVCacheView& view() const { return view_; }
  int32_t num_blocks() const { return num_blocks_; }

 private:
  int32_t num_blocks_;
  std::vector<AlignedBuffer> buffers_;  // per layer: keys and values, or a latent layer's rows
  KVCacheView view_;
};

}  // namespace vllm
