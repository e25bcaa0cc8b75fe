#include "base/aligned_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace vllm {
namespace {

// From this size on, a mapping of its own (page-aligned, hence 64-byte aligned).
constexpr size_t kMapThreshold = size_t{1} << 20;

size_t rounded(size_t size) { return (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

}  // namespace

AlignedBuffer::AlignedBuffer(size_t size_bytes) : size_(size_bytes) {
  if (size_ == 0) return;
  if (size_ >= kMapThreshold) {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = p;
    return;
  }
  data_ = std::aligned_alloc(kBufferAlignment, rounded(size_));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, rounded(size_));
}

void AlignedBuffer::commit() {
  if (size_ < kMapThreshold) return;  // from malloc, and written already
  // The kernel fills the mapping in one call where it can (Linux 5.14+);
  // otherwise one write per page does it.
  if (madvise(data_, size_, MADV_POPULATE_WRITE) == 0) return;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* bytes = static_cast<volatile char*>(data_);
  for (size_t at = 0; at < size_; at += page) bytes[at] = 0;
}

void AlignedBuffer::release() {
  if (data_ == nullptr) return;
  if (size_ >= kMapThreshold) {
    munmap(data_, size_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

}  // namespace vllm
