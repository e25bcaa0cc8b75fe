// A GGUF file (llama.cpp's format, versions 2 and 3), memory-mapped and
// checked: its metadata (typed key/value pairs) and its tensors (name,
// shape, ggml type, bytes in place).
//
// Layout, little-endian: "GGUF", version u32, tensor count u64, metadata
// count u64; each metadata pair: key (string), value type u32, value (an
// array is an element type u32, a count u64 and the elements); each tensor:
// name (string), dimension count u32, dimensions u64 each (fastest first),
// ggml type u32, offset u64 into the data section; then padding to the
// alignment (metadata "general.alignment", else 32) and the data section.
// A string is a length u64 and that many bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "kernels/ggml_blocks.h"

namespace vllm {

// One metadata value.  Integers keep their signedness; arrays hold values
// of one element type.
struct GgufValue {
  // The numbers the file stores.
  enum class Type : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
  };

  Type type = Type::kU8;
  uint64_t unsigned_value = 0;  // kU8..kU64, kBool
  int64_t signed_value = 0;     // kI8..kI64
  double float_value = 0;       // kF32, kF64
  std::string string;           // kString
  Type element_type = Type::kU8;
  std::vector<GgufValue> elements;  // kArray

  bool is_integer() const;
  bool is_float() const { return type == Type::kF32 || type == Type::kF64; }
  // An integer value as int64 (the caller checks is_integer()).
  int64_t as_int() const;
};

const char* gguf_value_type_name(GgufValue::Type type);

struct GgufTensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first, as our Tensor: GGUF's dimensions reversed
  kernels::GgmlTypeInfo type;
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;
  int64_t row_elements() const { return shape.empty() ? 1 : shape.back(); }
};

class GgufFile {
 public:
  // Maps and checks `path`; a file that is not GGUF, is truncated, or holds
  // a tensor type we do not read is an error naming the file and the fault.
  // The first split of a model gguf-split cut (PREFIX-00001-of-0000N.gguf,
  // metadata split.count) brings the others' tensors with it.
  static Result<GgufFile> open(const std::string& path);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& path() const { return files_.front().path(); }

  // The value of `key`, or nullptr.
  const GgufValue* find(const std::string& key) const;
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  // The tensors in the file's order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  // The tensor named `name`, or nullptr.
  const GgufTensor* tensor(const std::string& name) const;

 private:
  std::vector<MappedFile> files_;  // the first, then any further splits
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace vllm
