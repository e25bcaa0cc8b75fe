// How many of "<prefix>0.", "<prefix>1.", ... start some key of a sorted
// map, counting up to the first index none starts (WeightSource::count_numbered
// over a source's index of tensor names).
#pragma once

#include <cstdint>
#include <string>

namespace vllm {

template <typename SortedMap>
int64_t count_numbered_keys(const SortedMap& index, const std::string& prefix) {
  int64_t n = 0;
  while (true) {
    // The first name at or after "<prefix><n>." tells whether any has that start.
    const std::string start = prefix + std::to_string(n) + ".";
    const auto it = index.lower_bound(start);
    if (it == index.end() || !it->first.starts_with(start)) return n;
    ++n;
  }
}

}  // namespace vllm
