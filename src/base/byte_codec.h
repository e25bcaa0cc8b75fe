// Values laid end to end in a byte string and read back in the same order:
// the messages between the ranks of one job (the same binary on every
// rank, so a value's bytes are the same layout at both ends).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "base/logging.h"

namespace vllm {

class ByteWriter {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void put(const T& value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void put(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    bytes_.append(s);
  }
  template <typename T>
  void put(const std::vector<T>& values) {
    put(static_cast<uint64_t>(values.size()));
    for (const T& v : values) put(v);
  }
  template <typename T>
  void put(const std::optional<T>& value) {
    put(value.has_value());
    if (value) put(*value);
  }

  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& bytes) : bytes_(bytes) {}

  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void get(T& value) {
    VLLM_CHECK(at_ + sizeof value <= bytes_.size(), "a message shorter than its contents");
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
  }
  void get(std::string& s) {
    const uint64_t n = get<uint64_t>();
    VLLM_CHECK(n <= bytes_.size() - at_, "a message shorter than its contents");
    s.assign(bytes_, at_, n);
    at_ += n;
  }
  template <typename T>
  void get(std::vector<T>& values) {
    values.resize(get<uint64_t>());
    for (T& v : values) get(v);
  }
  template <typename T>
  void get(std::optional<T>& value) {
    value.reset();
    if (get<bool>()) {
      // Not value.emplace(): clang takes a nested struct with member
      // initializers for one not default-constructible inside its class.
      T v{};
      get(v);
      value = std::move(v);
    }
  }
  template <typename T>
  T get() {
    T value{};
    get(value);
    return value;
  }

  bool at_end() const { return at_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace vllm
