#include "model/loader/safetensors.h"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "base/json.h"

namespace vllm {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit

Result<Tensor> parse_entry(const std::string& path, const std::string& name, const Json& entry, const uint8_t* data,
                           uint64_t data_bytes) {
  const std::string where = path + ": tensor '" + name + "'";
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets")) {
    return data_loss(where + ": header entry needs dtype, shape and data_offsets");
  }
  const Json& dtype_json = entry["dtype"];
  if (!dtype_json.is_string()) return data_loss(where + ": dtype must be a string");
  const auto dtype = dtype_from_safetensors(dtype_json.get<std::string>());
  if (!dtype) {
    return unimplemented(where + ": unsupported dtype " + dtype_json.get<std::string>() +
                         " (supported: F32, BF16, F16, F8_E4M3, I64, I32, I8, BOOL)");
  }
  Tensor t;
  t.dtype = *dtype;
  const Json& shape = entry["shape"];
  if (!shape.is_array()) return data_loss(where + ": shape must be a list");
  uint64_t numel = 1;
  for (const Json& d : shape) {
    if (!d.is_number_unsigned()) return data_loss(where + ": shape must hold non-negative integers");
    const uint64_t dim = d.get<uint64_t>();
    if (dim != 0 && numel > (1ull << 48) / dim) return data_loss(where + ": shape is too large");
    numel *= dim;
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return data_loss(where + ": data_offsets must be two non-negative integers");
  }
  const uint64_t begin = offsets[0].get<uint64_t>();
  const uint64_t end = offsets[1].get<uint64_t>();
  if (begin > end || end > data_bytes) {
    return data_loss(where + ": data range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") lies outside the " + std::to_string(data_bytes) + " data bytes of the file (truncated?)");
  }
  if (end - begin != numel * dtype_size(t.dtype)) {
    return data_loss(where + ": " + std::to_string(end - begin) + " bytes do not hold shape " +
                     shape_to_string(t.shape) + " of " + dtype_name(t.dtype));
  }
  t.data = data + begin;
  return t;
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SafetensorsFile st;
  VLLM_ASSIGN_OR_RETURN(st.file_, MappedFile::open(path));
  const uint8_t* bytes = st.file_.data();
  const uint64_t size = st.file_.size();
  if (size < 8)
    return data_loss(path + ": truncated: " + std::to_string(size) + " bytes, too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeaderBytes) {
    return data_loss(path + ": corrupt safetensors header: declared header length " + std::to_string(header_len) +
                     " exceeds the 100 MiB limit");
  }
  if (8 + header_len > size) {
    return data_loss(path + ": truncated: the header declares " + std::to_string(header_len) + " bytes but only " +
                     std::to_string(size - 8) + " follow");
  }
  const std::string header_text(reinterpret_cast<const char*>(bytes + 8), header_len);
  Result<Json> header = parse_json(header_text, path + " (safetensors header)");
  if (!header.is_ok()) return data_loss(header.status().message());
  if (!header->is_object()) return data_loss(path + ": corrupt safetensors header: not a JSON object");
  const uint8_t* data = bytes + 8 + header_len;
  const uint64_t data_bytes = size - 8 - header_len;
  for (const auto& [name, entry] : header->items()) {
    if (name == "__metadata__") continue;
    VLLM_ASSIGN_OR_RETURN(Tensor t, parse_entry(path, name, entry, data, data_bytes));
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype);
    if (reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) != 0 && bytes > 0) {
      AlignedBuffer& copy = st.realigned_.emplace_back(bytes);
      std::memcpy(copy.data(), t.data, bytes);
      t.data = copy.data();
    }
    st.tensors_.emplace(name, std::move(t));
  }
  return st;
}

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors) {
  Json header = Json::object();
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    header[t.name] = {
        {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned, as the format recommends.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return invalid_argument(path + ": cannot open for writing");
  uint8_t len_bytes[8];
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(len >> (8 * i));
  out.write(reinterpret_cast<const char*>(len_bytes), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const TensorToWrite& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  }
  if (!out) return invalid_argument(path + ": write failed");
  return Status::ok();
}

}  // namespace vllm
