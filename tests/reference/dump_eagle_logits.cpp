// Test helper: the logits an EAGLE or EAGLE-3 head gives over a token
// sequence and then over its own guesses, for the numpy reference check
// (check_eagle.py).  The target runs the sequence; the head's row p reads
// token p + 1 with the target's hidden state at p (the final one, or for
// EAGLE-3 the residual stream entering its auxiliary layers), at position
// p, in prefill chunks of CHUNK_TOKENS; then NUM_GUESSES - 1 one-token passes
// each read the last row's argmax with the head's own output for that row.
// Usage: dump_eagle_logits eagle|eagle3 TARGET_DIR HEAD_DIR CHUNK_TOKENS NUM_GUESSES OUT_FILE < ids
// OUT_FILE receives float32 [num_tokens - 1 + NUM_GUESSES - 1, vocab_size], little-endian.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/prompt_scorer.h"
#include "model/model.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vllm;
  if (argc != 7) {
    std::fprintf(stderr,
                 "usage: dump_eagle_logits eagle|eagle3 TARGET_DIR HEAD_DIR CHUNK_TOKENS NUM_GUESSES OUT_FILE < ids\n");
    return 2;
  }
  Result<std::unique_ptr<Model>> target = load_model(argv[2]);
  if (!target.is_ok()) return fail(target.status().message());
  Result<std::unique_ptr<Model>> head =
      std::string(argv[1]) == "eagle3" ? load_eagle3_head(argv[3], **target) : load_eagle_head(argv[3], **target);
  if (!head.is_ok()) return fail(head.status().message());
  const int32_t chunk_tokens = std::stoi(argv[4]);
  const int32_t num_guesses = std::stoi(argv[5]);
  std::vector<int32_t> ids;
  for (int32_t id; std::cin >> id;) ids.push_back(id);
  if (ids.size() < 2 || chunk_tokens < 1 || num_guesses < 1) return fail("give two token ids or more");

  ThreadPool pool(2);
  const HiddenStateTap tap = *(*head)->target_hidden_states();
  const int64_t width = tap.width((*target)->config().hidden_size);
  std::vector<float> target_hidden;
  Result<std::vector<float>> scored = score_all_positions(**target, pool, ids, static_cast<int32_t>(ids.size()), 16,
                                                          DType::kF32, {.tap = tap, .output = &target_hidden});
  if (!scored.is_ok()) return fail(scored.status().message());

  // The head's rows, then its guesses, in one sequence's blocks.
  const auto rows = static_cast<int32_t>(ids.size()) - 1;
  const int32_t length = rows + num_guesses - 1;
  std::vector<BlockId> block_table(static_cast<size_t>((length + 15) / 16));
  std::iota(block_table.begin(), block_table.end(), 0);
  ModelRunner runner(**head, pool, KVCacheShape{(*head)->kv_cache_spec(), 16, DType::kF32},
                     static_cast<int32_t>(block_table.size()));
  const auto vocab = static_cast<size_t>((*head)->config().vocab_size);
  const auto hidden_size = static_cast<size_t>((*head)->config().hidden_size);
  std::vector<float> logits;
  std::vector<int32_t> tokens(ids.begin() + 1, ids.end());
  tokens.reserve(static_cast<size_t>(length));
  std::vector<float> own_output;
  auto run = [&](int32_t first, int32_t end, const float* input, bool from_head) {
    ForwardChunk chunk;
    chunk.token_ids =
        std::span<const int32_t>(tokens).subspan(static_cast<size_t>(first), static_cast<size_t>(end - first));
    chunk.num_computed_tokens = first;
    chunk.num_prompt_tokens = rows;
    chunk.block_table = block_table;
    chunk.num_logits = end - first;
    const std::span<const float> out = runner.execute(std::span<const ForwardChunk>(&chunk, 1), input, from_head);
    logits.insert(logits.end(), out.begin(), out.end());
    const std::span<const float> outputs = runner.logits_hidden_states();
    own_output.assign(outputs.end() - static_cast<ptrdiff_t>(hidden_size), outputs.end());
  };
  for (int32_t first = 0; first < rows; first += chunk_tokens) {
    run(first, std::min(rows, first + chunk_tokens), target_hidden.data() + first * width, false);
  }
  for (int32_t g = 1; g < num_guesses; ++g) {
    const float* last = logits.data() + logits.size() - vocab;
    tokens.push_back(static_cast<int32_t>(std::max_element(last, last + vocab) - last));
    const std::vector<float> input = own_output;
    run(static_cast<int32_t>(tokens.size()) - 1, static_cast<int32_t>(tokens.size()), input.data(), true);
  }
  FILE* out = std::fopen(argv[6], "wb");
  if (out == nullptr || std::fwrite(logits.data(), sizeof(float), logits.size(), out) != logits.size()) {
    return fail(std::string("cannot write ") + argv[6]);
  }
  std::fclose(out);
  return 0;
}
