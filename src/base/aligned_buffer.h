// Owning, 64-byte aligned, zero-initialised storage for kernels (cache-line
// and AVX-512 aligned). Copying costs memory, so it is move-only.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace vllm {

inline constexpr size_t kBufferAlignment = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size_bytes) : size_(size_bytes) {
    if (size_ == 0) return;
    const size_t rounded = (size_ + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    data_ = std::aligned_alloc(kBufferAlignment, rounded);
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, rounded);
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size_bytes() const { return size_; }

  template <typename T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace vllm
