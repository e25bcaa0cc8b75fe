// Prefix-cache identity of a full KV block: SHA-256 over (parent block's
// hash, the block's token ids, extra keys such as a per-tenant cache_salt),
// so a block's hash names its whole prefix.  A collision-resistant hash,
// because a collision would serve one request another's KV.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace vllm {

using BlockHash = std::array<uint8_t, 32>;

BlockHash hash_block_tokens(const std::optional<BlockHash>& parent, std::span<const int32_t> token_ids,
                            std::string_view extra_keys = {});

}  // namespace vllm
