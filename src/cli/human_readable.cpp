#include "cli/human_readable.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace vllm::cli {

Result<int64_t> parse_human_readable_int(const std::string& text) {
  static const std::map<std::string, double> kMultipliers = {{"", 1.0},
                                                             {"B", 1.0},
                                                             {"k", 1e3},
                                                             {"m", 1e6},
                                                             {"g", 1e9},
                                                             {"t", 1e12},
                                                             {"K", 1024.0},
                                                             {"M", 1048576.0},
                                                             {"G", 1073741824.0},
                                                             {"T", 1099511627776.0},
                                                             {"KiB", 1024.0},
                                                             {"MiB", 1048576.0},
                                                             {"GiB", 1073741824.0},
                                                             {"TiB", 1099511627776.0},
                                                             {"KB", 1e3},
                                                             {"MB", 1e6},
                                                             {"GB", 1e9},
                                                             {"TB", 1e12}};
  const auto error = [&] {
    return invalid_argument("'" + text + "' is not a size (examples: 2048, 1k, 1K, 512MiB, 4GiB)");
  };
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  if (end == 0) return error();
  char* parsed_end = nullptr;
  const std::string number = text.substr(0, end);
  const double value = std::strtod(number.c_str(), &parsed_end);
  if (parsed_end != number.c_str() + number.size()) return error();
  auto it = kMultipliers.find(text.substr(end));
  if (it == kMultipliers.end()) return error();
  const double result = value * it->second;
  if (!std::isfinite(result) || result > 9.2e18 || result != std::floor(result)) return error();
  return static_cast<int64_t>(result);
}

}  // namespace vllm::cli
