// Helpers shared by the tests: data locations and scratch directories.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace vllm::testing {

inline std::string model_dir() { return VLLM_TEST_MODEL_DIR; }
inline std::string golden_dir() { return VLLM_TEST_GOLDEN_DIR; }
inline std::string shared_dir() { return VLLM_TEST_SHARED_DIR; }

// n values drawn from N(0, 1) with a fixed seed.
inline std::vector<float> random_normal(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A fresh directory removed when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vllm-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A copy of the embedded stories260k model directory to break on purpose.
inline void copy_model(const std::string& to) {
  for (const auto& entry : std::filesystem::directory_iterator(model_dir())) {
    if (entry.is_regular_file()) std::filesystem::copy_file(entry.path(), to + "/" + entry.path().filename().string());
  }
}

}  // namespace vllm::testing
