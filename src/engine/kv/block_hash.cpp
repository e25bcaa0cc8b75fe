#include "engine/kv/block_hash.h"

#include <openssl/evp.h>

#include <memory>

namespace vllm {

BlockHash hash_block_tokens(const std::optional<BlockHash>& parent, std::span<const int32_t> token_ids,
                            std::string_view extra_keys) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> owned(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_MD_CTX* ctx = owned.get();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  // Field tags and lengths keep different splits of the same bytes apart.
  const uint8_t has_parent = parent ? 1 : 0;
  EVP_DigestUpdate(ctx, &has_parent, 1);
  if (parent) EVP_DigestUpdate(ctx, parent->data(), parent->size());
  const uint64_t num_tokens = token_ids.size();
  EVP_DigestUpdate(ctx, &num_tokens, sizeof num_tokens);
  EVP_DigestUpdate(ctx, token_ids.data(), token_ids.size_bytes());
  const uint64_t extra_len = extra_keys.size();
  EVP_DigestUpdate(ctx, &extra_len, sizeof extra_len);
  EVP_DigestUpdate(ctx, extra_keys.data(), extra_keys.size());
  BlockHash out;
  EVP_DigestFinal_ex(ctx, out.data(), nullptr);
  return out;
}

}  // namespace vllm
