#include "base/file_util.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace vllm {

bool file_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool directory_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::string> read_text_file(const std::string& path) {
  if (directory_exists(path)) return invalid_argument(path + ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!file_exists(path)) return not_found(path + ": file not found");
    return invalid_argument(path + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return invalid_argument(path + ": cannot open for writing: " + std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) return invalid_argument(path + ": write failed");
  return Status::ok();
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace vllm
