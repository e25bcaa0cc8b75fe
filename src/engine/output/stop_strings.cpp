#include "engine/output/stop_strings.h"

#include <algorithm>

namespace vllm {

StopStrings::StopStrings(std::vector<std::string> stops, bool include_in_output)
    : stops_(std::move(stops)), include_in_output_(include_in_output) {
  // Text before a match is released anyway when the match is included, and
  // the match itself is released once complete; otherwise a prefix of a stop
  // string must wait.
  if (!include_in_output_) {
    for (const std::string& s : stops_) hold_back_ = std::max(hold_back_, s.size() - 1);
  }
}

std::optional<StopStrings::Match> StopStrings::find(std::string_view text, size_t new_bytes) const {
  std::optional<Match> best;
  size_t best_start = text.size();
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& stop = stops_[i];
    // A match ending in the new bytes starts at or after this.
    const size_t from = text.size() - std::min(text.size(), new_bytes + stop.size() - 1);
    const size_t start = text.find(stop, from);
    if (start == std::string_view::npos || start >= best_start) continue;
    best_start = start;
    best = Match{i, include_in_output_ ? start + stop.size() : start};
  }
  return best;
}

size_t StopStrings::releasable(std::string_view text) const {
  size_t end = text.size() - std::min(text.size(), hold_back_);
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return end;
}

}  // namespace vllm
