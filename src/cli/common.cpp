#include <cstdio>
#include <string>

#include "cli/commands.h"

namespace vllm::cli {

const char* default_model_dir() { return VLLM_CPP_DEFAULT_MODEL_DIR; }

int report_error(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

}  // namespace vllm::cli
