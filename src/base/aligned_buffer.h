// Owning, 64-byte aligned, zero-initialised storage for kernels (cache-line
// and AVX-512 aligned). Copying costs memory, so it is move-only.
//
// Large buffers (the KV cache, packed weights) come straight from the kernel
// as anonymous mappings, which are zero without being written: nothing is
// touched until used, so start-up does not spend seconds clearing a KV pool
// that may never fill, and memory is committed only as blocks are used
// (unless commit() asks for all of it at once).
#pragma once

#include <cstddef>
#include <utility>

namespace vllm {

inline constexpr size_t kBufferAlignment = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size_bytes);
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { release(); }

  // Makes every page resident now instead of at its first use, so that the
  // memory is known to be there before it is needed (a server's KV pool).
  void commit();

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
  void release();

  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace vllm
