#include "base/json.h"

#include "base/file_util.h"

namespace vllm {

Result<Json> parse_json(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    return invalid_argument(what + ": invalid JSON (" + std::string(e.what()) + ")");
  }
}

Result<Json> read_json_file(const std::string& path) {
  VLLM_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return parse_json(text, path);
}

}  // namespace vllm
