// Streams the text of generated tokens one token at a time.  Each delta is
// whole UTF-8 (text that still ends in an incomplete byte sequence is held
// back until the sequence completes, or until flush()), and the deltas
// concatenate to the one-shot decode of the same ids.
//
// Only a short window of recent tokens is decoded per step: the text of
// tokens [prefix_offset, read_offset) was already sent, so the delta is what
// decoding [prefix_offset, end) adds to it.  Decoding a window rather than a
// single token keeps context-dependent decoders (SentencePiece's leading
// space) right; a run of byte-fallback tokens is held until it ends, since
// it decodes as a whole.  When the tokenizer cleans up spaces before
// punctuation, text that a later token could still turn into such a match
// (a space in the last few bytes) is held back until it cannot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace vllm {

class IncrementalDetokenizer {
 public:
  // `context_ids` (e.g. the prompt) are decoded for context only, never emitted.
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens, std::vector<int32_t> context_ids = {});

  // The new text that `id` completes (possibly empty).
  std::string push(int32_t id);

  // Whatever is still held back (e.g. a trailing incomplete byte sequence).
  std::string flush();

 private:
  std::string decode_range(size_t begin, size_t end) const;
  // Emits the part of uncleaned_ that no clean-up rule can still change.
  std::string release(bool all);

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_;
  size_t read_offset_;
  std::string uncleaned_;  // decoded, not yet emitted (clean-up pending)
};

}  // namespace vllm
