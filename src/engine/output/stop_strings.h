// Stop strings on generated text that grows a piece at a time.  A match may
// span several tokens; only matches that end in the newest piece are looked
// for, since older text was searched when it arrived.  While a sequence
// streams, the last few bytes could still turn out to begin a stop string,
// so they are held back (vLLM's stop buffer).  Text is UTF-8 and stop
// strings are whole characters, so a byte match is a character match.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vllm {

class StopStrings {
 public:
  StopStrings(std::vector<std::string> stops, bool include_in_output);

  struct Match {
    size_t stop_index = 0;  // into the stop strings
    size_t text_end = 0;    // the text is cut here: before the match, or after it when it is included
  };

  // The earliest stop string in `text` that ends within its last `new_bytes` bytes.
  std::optional<Match> find(std::string_view text, size_t new_bytes) const;

  // How far into `text` a streaming sequence may release: nothing that could
  // still become part of a stop string, and never half a character.
  size_t releasable(std::string_view text) const;

  const std::string& stop(size_t index) const { return stops_[index]; }
  bool empty() const { return stops_.empty(); }
  // include_stop_str_in_output: stop strings, and the text of the stop token, stay in the output.
  bool includes_stop_text() const { return include_in_output_; }

 private:
  std::vector<std::string> stops_;
  bool include_in_output_;
  size_t hold_back_ = 0;  // longest stop string - 1, or 0 when a match is kept in the output
};

}  // namespace vllm
