// gguf_dump FILE OUT_DIR: opens FILE with GgufFile and prints what it read
// as one JSON document (version, alignment, metadata with types, tensors
// with shapes and types); each tensor's values, dequantized row by row with
// dequantize_ggml_row, go to OUT_DIR/<index>.f32 (little-endian FP32).  A
// file GgufFile refuses: its one-line error on stderr, exit status 1.
// check_gguf.py compares all of it with its own numpy reader.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <vector>

#include "base/json.h"
#include "model/loader/gguf_file.h"

namespace {

vllm::Json value_json(const vllm::GgufValue& v) {
  using Type = vllm::GgufValue::Type;
  vllm::Json out;
  out["type"] = vllm::gguf_value_type_name(v.type);
  if (v.type == Type::kArray) {
    out["element_type"] = vllm::gguf_value_type_name(v.element_type);
    vllm::Json items = vllm::Json::array();
    for (const vllm::GgufValue& e : v.elements) items.push_back(value_json(e)["value"]);
    out["value"] = std::move(items);
  } else if (v.type == Type::kString) {
    out["value"] = v.string;
  } else if (v.type == Type::kBool) {
    out["value"] = v.unsigned_value != 0;
  } else if (v.is_float()) {
    out["value"] = v.float_value;
  } else if (v.type == Type::kI8 || v.type == Type::kI16 || v.type == Type::kI32 || v.type == Type::kI64) {
    out["value"] = v.signed_value;
  } else {
    out["value"] = v.unsigned_value;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: gguf_dump FILE OUT_DIR\n";
    return 2;
  }
  auto file = vllm::GgufFile::open(argv[1]);
  if (!file.is_ok()) {
    std::cerr << file.status().message() << "\n";
    return 1;
  }
  vllm::Json doc;
  doc["version"] = file->version();
  doc["alignment"] = file->alignment();
  doc["metadata"] = vllm::Json::object();
  for (const auto& [key, value] : file->metadata()) doc["metadata"][key] = value_json(value);
  doc["tensors"] = vllm::Json::array();
  const std::string out_dir = argv[2];
  for (size_t i = 0; i < file->tensors().size(); ++i) {
    const vllm::GgufTensor& t = file->tensors()[i];
    doc["tensors"].push_back({{"name", t.name}, {"shape", t.shape}, {"type", t.type.name}});
    const int64_t row = t.row_elements();
    const int64_t rows = row == 0 ? 0 : static_cast<int64_t>(t.bytes) / vllm::kernels::ggml_row_bytes(t.type, row);
    std::vector<float> values(static_cast<size_t>(rows * row));
    for (int64_t r = 0; r < rows; ++r) {
      vllm::kernels::dequantize_ggml_row(t.type.type, t.data + r * vllm::kernels::ggml_row_bytes(t.type, row),
                                         values.data() + r * row, row);
    }
    std::ofstream(out_dir + "/" + std::to_string(i) + ".f32", std::ios::binary)
        .write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
  }
  std::cout << vllm::dump_json(doc) << "\n";
  return 0;
}
