#include "model/loader/gguf_file.h"

#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <type_traits>

namespace vllm {
namespace {

// ggml's limits: four dimensions, names shorter than 64 bytes.
constexpr uint32_t kMaxDims = 4;
constexpr size_t kMaxNameBytes = 63;

// Reads the header in order, every read checked against the end of the
// file; `fault` keeps the first error.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : at_(data), begin_(data), end_(data + size) {}

  size_t offset() const { return static_cast<size_t>(at_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - at_); }

  template <typename T>
  bool read(T& value) {
    if (remaining() < sizeof(T)) return fail("the header ends early (truncated?)");
    std::memcpy(&value, at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }

  bool read(std::string& s) {
    uint64_t length = 0;
    if (!read(length)) return false;
    if (length > remaining()) return fail("a string of " + std::to_string(length) + " bytes runs past the end");
    s.assign(reinterpret_cast<const char*>(at_), static_cast<size_t>(length));
    at_ += length;
    return true;
  }

  bool fail(std::string message) {
    if (fault_.empty()) fault_ = std::move(message) + " at byte " + std::to_string(offset());
    return false;
  }
  const std::string& fault() const { return fault_; }

 private:
  const uint8_t* at_;
  const uint8_t* begin_;
  const uint8_t* end_;
  std::string fault_;
};

// The smallest number of bytes an element of `type` takes (to bound an
// array's count by the bytes left before allocating it).
size_t min_bytes(GgufValue::Type type) {
  switch (type) {
    case GgufValue::Type::kU8:
    case GgufValue::Type::kI8:
    case GgufValue::Type::kBool:
      return 1;
    case GgufValue::Type::kU16:
    case GgufValue::Type::kI16:
      return 2;
    case GgufValue::Type::kU32:
    case GgufValue::Type::kI32:
    case GgufValue::Type::kF32:
      return 4;
    default:
      return 8;  // 64-bit numbers; a string's length
  }
}

template <typename T>
bool read_number(Reader& r, GgufValue& v) {
  T raw{};
  if (!r.read(raw)) return false;
  if constexpr (std::is_floating_point_v<T>) {
    v.float_value = raw;
  } else if constexpr (std::is_signed_v<T>) {
    v.signed_value = raw;
  } else {
    v.unsigned_value = raw;
  }
  return true;
}

bool read_value(Reader& r, GgufValue::Type type, GgufValue& v, bool in_array) {
  v.type = type;
  switch (type) {
    case GgufValue::Type::kU8:
      return read_number<uint8_t>(r, v);
    case GgufValue::Type::kI8:
      return read_number<int8_t>(r, v);
    case GgufValue::Type::kU16:
      return read_number<uint16_t>(r, v);
    case GgufValue::Type::kI16:
      return read_number<int16_t>(r, v);
    case GgufValue::Type::kU32:
      return read_number<uint32_t>(r, v);
    case GgufValue::Type::kI32:
      return read_number<int32_t>(r, v);
    case GgufValue::Type::kU64:
      return read_number<uint64_t>(r, v);
    case GgufValue::Type::kI64:
      return read_number<int64_t>(r, v);
    case GgufValue::Type::kF32:
      return read_number<float>(r, v);
    case GgufValue::Type::kF64:
      return read_number<double>(r, v);
    case GgufValue::Type::kBool: {
      if (!read_number<uint8_t>(r, v)) return false;
      if (v.unsigned_value > 1) return r.fail("a bool is " + std::to_string(v.unsigned_value));
      return true;
    }
    case GgufValue::Type::kString:
      return r.read(v.string);
    case GgufValue::Type::kArray: {
      if (in_array) return r.fail("an array of arrays");
      uint32_t element = 0;
      uint64_t count = 0;
      if (!r.read(element) || !r.read(count)) return false;
      if (element > static_cast<uint32_t>(GgufValue::Type::kF64)) {
        return r.fail("unknown array element type " + std::to_string(element));
      }
      v.element_type = static_cast<GgufValue::Type>(element);
      if (count > r.remaining() / min_bytes(v.element_type)) {
        return r.fail("an array of " + std::to_string(count) + " elements runs past the end");
      }
      v.elements.resize(static_cast<size_t>(count));
      for (GgufValue& e : v.elements) {
        if (!read_value(r, v.element_type, e, true)) return false;
      }
      return true;
    }
  }
  return r.fail("unknown value type " + std::to_string(static_cast<uint32_t>(type)));
}

}  // namespace

bool GgufValue::is_integer() const {
  switch (type) {
    case Type::kU8:
    case Type::kI8:
    case Type::kU16:
    case Type::kI16:
    case Type::kU32:
    case Type::kI32:
    case Type::kU64:
    case Type::kI64:
      return true;
    default:
      return false;
  }
}

int64_t GgufValue::as_int() const {
  switch (type) {
    case Type::kI8:
    case Type::kI16:
    case Type::kI32:
    case Type::kI64:
      return signed_value;
    default:
      return static_cast<int64_t>(unsigned_value);
  }
}

const char* gguf_value_type_name(GgufValue::Type type) {
  static const char* const kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                       "bool",  "string", "array",  "uint64", "int64",  "float64"};
  const auto i = static_cast<size_t>(type);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

namespace {

// One file's header and tensors (a whole model, or one split of one).
struct GgufPart {
  MappedFile file;
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;
};

Result<GgufPart> read_part(const std::string& path) {
  GgufPart f;
  VLLM_ASSIGN_OR_RETURN(f.file, MappedFile::open(path));
  const auto error = [&path](const std::string& what) {
    return data_loss(path + ": not a readable GGUF file: " + what);
  };
  Reader r(f.file.data(), f.file.size());
  uint32_t magic = 0;
  if (f.file.size() < 4 || std::memcmp(f.file.data(), "GGUF", 4) != 0) {
    return error("it does not start with \"GGUF\"");
  }
  r.read(magic);
  uint64_t tensor_count = 0, kv_count = 0;
  if (!r.read(f.version) || !r.read(tensor_count) || !r.read(kv_count)) return error(r.fault());
  if (f.version != 2 && f.version != 3) {
    return error("version " + std::to_string(f.version) + " (versions 2 and 3 are read)");
  }
  // Each pair and tensor takes at least 8 bytes: a count past that is a corrupt header.
  if (kv_count > r.remaining() / 8 || tensor_count > r.remaining() / 8) return error("impossible counts in the header");
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key;
    uint32_t type = 0;
    GgufValue value;
    if (!r.read(key) || !r.read(type)) return error(r.fault());
    if (type > static_cast<uint32_t>(GgufValue::Type::kF64)) {
      return error("metadata '" + key + "' has unknown type " + std::to_string(type));
    }
    if (!read_value(r, static_cast<GgufValue::Type>(type), value, false)) {
      return error("metadata '" + key + "': " + r.fault());
    }
    if (!f.metadata.emplace(key, std::move(value)).second) return error("metadata '" + key + "' appears twice");
  }
  if (const auto it = f.metadata.find("general.alignment"); it != f.metadata.end()) {
    const GgufValue* alignment = &it->second;
    if (alignment->type != GgufValue::Type::kU32 || alignment->unsigned_value == 0 ||
        (alignment->unsigned_value & (alignment->unsigned_value - 1)) != 0) {
      return error("general.alignment must be a uint32 power of two");
    }
    f.alignment = alignment->unsigned_value;
  }
  struct Entry {
    GgufTensor tensor;
    uint64_t offset;
  };
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    Entry e;
    uint32_t dims = 0, type = 0;
    if (!r.read(e.tensor.name) || !r.read(dims)) return error(r.fault());
    const std::string where = "tensor '" + e.tensor.name + "'";
    if (e.tensor.name.size() > kMaxNameBytes) return error(where + ": a name longer than 63 bytes");
    if (dims > kMaxDims) return error(where + ": " + std::to_string(dims) + " dimensions (at most 4)");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      uint64_t extent = 0;
      if (!r.read(extent)) return error(r.fault());
      if (extent != 0 && elements > (uint64_t{1} << 48) / extent) return error(where + ": too many elements");
      elements *= extent;
      e.tensor.shape.insert(e.tensor.shape.begin(), static_cast<int64_t>(extent));
    }
    if (!r.read(type) || !r.read(e.offset)) return error(r.fault());
    const std::optional<kernels::GgmlTypeInfo> info = kernels::ggml_type_info(type);
    if (!info) {
      return unimplemented(path + ": " + where + " has GGUF tensor type " + kernels::ggml_type_name(type) +
                           ", which is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, "
                           "Q4_K, Q5_K and Q6_K are)");
    }
    e.tensor.type = *info;
    if (e.tensor.row_elements() % info->block_elements != 0) {
      return error(where + ": rows of " + std::to_string(e.tensor.row_elements()) + " values are not whole " +
                   info->name + " blocks of " + std::to_string(info->block_elements));
    }
    e.tensor.bytes = elements / static_cast<uint64_t>(info->block_elements) * static_cast<uint64_t>(info->block_bytes);
    if (!names.insert(e.tensor.name).second) return error(where + " appears twice");
    entries.push_back(std::move(e));
  }
  const uint64_t data_start = (r.offset() + f.alignment - 1) / f.alignment * f.alignment;
  const uint64_t file_size = f.file.size();
  for (Entry& e : entries) {
    const std::string where = "tensor '" + e.tensor.name + "'";
    if (e.offset % f.alignment != 0) return error(where + ": data offset not a multiple of the alignment");
    if (data_start > file_size || e.offset > file_size - data_start ||
        e.tensor.bytes > file_size - data_start - e.offset) {
      return error(where + ": its " + std::to_string(e.tensor.bytes) +
                   " bytes lie past the end of the file (truncated?)");
    }
    e.tensor.data = f.file.data() + data_start + e.offset;
    f.tensors.push_back(std::move(e.tensor));
  }
  return f;
}

// Where split `index` (0-based) of `count` lies, given the first split's
// path (llama.cpp's gguf-split names: PREFIX-00001-of-0000N.gguf); "" when
// the first path is not so named.
std::string split_path(const std::string& first, int64_t index, int64_t count) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", 1, static_cast<int>(count));
  if (!first.ends_with(suffix)) return "";
  std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", static_cast<int>(index + 1), static_cast<int>(count));
  return first.substr(0, first.size() - std::strlen(suffix)) + suffix;
}

int64_t integer_or(const std::map<std::string, GgufValue>& metadata, const std::string& key, int64_t fallback) {
  const auto it = metadata.find(key);
  return it != metadata.end() && it->second.is_integer() ? it->second.as_int() : fallback;
}

}  // namespace

Result<GgufFile> GgufFile::open(const std::string& path) {
  VLLM_ASSIGN_OR_RETURN(GgufPart first, read_part(path));
  GgufFile f;
  f.version_ = first.version;
  f.alignment_ = first.alignment;
  f.metadata_ = std::move(first.metadata);
  f.tensors_ = std::move(first.tensors);
  f.files_.push_back(std::move(first.file));
  // A model split by gguf-split: the other parts hold tensors (and their
  // own split.no); the first holds the metadata.
  const int64_t count = integer_or(f.metadata_, "split.count", 1);
  if (count > 1) {
    const int64_t number = integer_or(f.metadata_, "split.no", 0);
    const std::string second = split_path(path, 1, count);
    if (number != 0 || second.empty()) {
      return invalid_argument(path + ": split " + std::to_string(number + 1) + " of " + std::to_string(count) +
                              " of a GGUF model: load the first, named *-00001-of-" + std::to_string(count) + ".gguf");
    }
    for (int64_t index = 1; index < count; ++index) {
      const std::string part_path = split_path(path, index, count);
      VLLM_ASSIGN_OR_RETURN(GgufPart part, read_part(part_path));
      if (integer_or(part.metadata, "split.no", -1) != index) {
        return invalid_argument(part_path + ": not split " + std::to_string(index + 1) + " of " + path);
      }
      for (GgufTensor& t : part.tensors) f.tensors_.push_back(std::move(t));
      f.files_.push_back(std::move(part.file));
    }
  }
  for (size_t i = 0; i < f.tensors_.size(); ++i) {
    if (!f.tensor_index_.emplace(f.tensors_[i].name, i).second) {
      return invalid_argument(path + ": tensor '" + f.tensors_[i].name + "' appears in two splits");
    }
  }
  const int64_t expected = integer_or(f.metadata_, "split.tensors.count", static_cast<int64_t>(f.tensors_.size()));
  if (expected != static_cast<int64_t>(f.tensors_.size())) {
    return invalid_argument(path + ": split.tensors.count is " + std::to_string(expected) + " but the splits hold " +
                            std::to_string(f.tensors_.size()));
  }
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace vllm
