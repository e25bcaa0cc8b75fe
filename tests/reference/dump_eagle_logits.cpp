// Test helper: the logits an EAGLE head gives at every position of a token
// sequence, for the numpy reference check (check_eagle.py).  The target runs
// the sequence; the head's row p reads token p + 1 with the target's final
// hidden state at p, at position p, in prefill chunks of CHUNK_TOKENS.
// Usage: dump_eagle_logits TARGET_DIR HEAD_DIR CHUNK_TOKENS OUT_FILE < ids (whitespace-separated)
// OUT_FILE receives float32 [num_tokens - 1, vocab_size], little-endian.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/runner/prompt_scorer.h"
#include "model/model.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: dump_eagle_logits TARGET_DIR HEAD_DIR CHUNK_TOKENS OUT_FILE < ids\n");
    return 2;
  }
  vllm::Result<std::unique_ptr<vllm::Model>> target = vllm::load_model(argv[1]);
  if (!target.is_ok()) return fail(target.status().message());
  vllm::Result<std::unique_ptr<vllm::Model>> head = vllm::load_eagle_head(argv[2], **target);
  if (!head.is_ok()) return fail(head.status().message());
  std::vector<int32_t> ids;
  for (int32_t id; std::cin >> id;) ids.push_back(id);
  if (ids.size() < 2) return fail("give at least two token ids");
  vllm::ThreadPool pool(2);
  std::vector<float> target_hidden;
  vllm::Result<std::vector<float>> scored = vllm::score_all_positions(
      **target, pool, ids, static_cast<int32_t>(ids.size()), 16, vllm::DType::kF32, {.output = &target_hidden});
  if (!scored.is_ok()) return fail(scored.status().message());
  const std::vector<int32_t> next_tokens(ids.begin() + 1, ids.end());
  vllm::Result<std::vector<float>> logits = vllm::score_all_positions(
      **head, pool, next_tokens, std::stoi(argv[3]), 16, vllm::DType::kF32, {.input = target_hidden.data()});
  if (!logits.is_ok()) return fail(logits.status().message());
  FILE* out = std::fopen(argv[4], "wb");
  if (out == nullptr || std::fwrite(logits->data(), sizeof(float), logits->size(), out) != logits->size()) {
    return fail(std::string("cannot write ") + argv[4]);
  }
  std::fclose(out);
  return 0;
}
