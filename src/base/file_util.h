// Whole-file reads and writes with errors that name the file.
#pragma once

#include <string>

#include "base/status.h"

namespace vllm {

bool file_exists(const std::string& path);
bool directory_exists(const std::string& path);
Result<std::string> read_text_file(const std::string& path);
Status write_text_file(const std::string& path, const std::string& text);
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace vllm
