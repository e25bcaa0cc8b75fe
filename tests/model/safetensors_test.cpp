#include "model/loader/safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "test_util.h"

namespace vllm {
namespace {

using testing::TempDir;
using testing::write_file;

std::string with_header(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  return out + header + data;
}

// Writes `contents` as a .safetensors file and returns the error of opening it.
std::string open_error(const std::string& contents) {
  TempDir dir;
  write_file(dir.file("t.safetensors"), contents);
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  EXPECT_FALSE(f.is_ok());
  return f.is_ok() ? "" : f.status().message();
}

TEST(SafetensorsTest, WrittenFileReadsBack) {
  TempDir dir;
  TensorToWrite t{"w", DType::kF32, {2, 2}, std::vector<uint8_t>(16)};
  const float values[4] = {1, 2, 3, 4};
  std::memcpy(t.bytes.data(), values, 16);
  ASSERT_TRUE(write_safetensors(dir.file("a.safetensors"), {t}).is_ok());
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("a.safetensors"));
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  const Tensor& w = f->tensors().at("w");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(w.as<float>()[3], 4.0f);
}

// A 1-byte tensor first puts the F32 one after it at an odd offset: it is
// read through an aligned copy, its values intact.
TEST(SafetensorsTest, MisalignedTensorReadsAligned) {
  TempDir dir;
  TensorToWrite zero_point{"a.input_zero_point", DType::kI8, {1}, {0xF7}};
  TensorToWrite w{"b.weight", DType::kF32, {3}, std::vector<uint8_t>(12)};
  const float values[3] = {1.5f, -2.0f, 3.25f};
  std::memcpy(w.bytes.data(), values, 12);
  ASSERT_TRUE(write_safetensors(dir.file("m.safetensors"), {zero_point, w}).is_ok());
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("m.safetensors"));
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  const Tensor& t = f->tensors().at("b.weight");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % alignof(float), 0u);
  EXPECT_EQ(t.as<float>()[0], 1.5f);
  EXPECT_EQ(t.as<float>()[2], 3.25f);
  EXPECT_EQ(f->tensors().at("a.input_zero_point").as<int8_t>()[0], -9);
}

TEST(SafetensorsTest, MissingFileIsNamed) {
  Result<SafetensorsFile> f = SafetensorsFile::open("/nonexistent/x.safetensors");
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().message(), "/nonexistent/x.safetensors: file not found");
}

TEST(SafetensorsTest, FileShorterThanLengthPrefixIsTruncated) {
  const std::string msg = open_error("abc");
  EXPECT_NE(msg.find("truncated: 3 bytes, too short for a safetensors header"), std::string::npos) << msg;
}

TEST(SafetensorsTest, HeaderCutShortIsTruncated) {
  const std::string full = with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd");
  const std::string msg = open_error(full.substr(0, 30));
  EXPECT_NE(msg.find("truncated: the header declares 54 bytes but only 22 follow"), std::string::npos) << msg;
}

TEST(SafetensorsTest, CorruptHeaderJsonIsReported) {
  const std::string msg = open_error(with_header("{not json", ""));
  EXPECT_NE(msg.find("safetensors header): not valid JSON"), std::string::npos) << msg;
}

TEST(SafetensorsTest, HugeDeclaredHeaderIsCorrupt) {
  const std::string msg = open_error(std::string(16, '\xff'));
  EXPECT_NE(msg.find("corrupt safetensors header"), std::string::npos) << msg;
}

TEST(SafetensorsTest, DataBeyondTheFileIsTruncated) {
  const std::string msg =
      open_error(with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "12345678"));
  EXPECT_NE(msg.find("tensor 'w': data range [0, 16) lies outside the 8 data bytes"), std::string::npos) << msg;
}

TEST(SafetensorsTest, SizeMustMatchShape) {
  const std::string msg =
      open_error(with_header(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", "12345678"));
  EXPECT_NE(msg.find("8 bytes do not hold shape [3] of BF16"), std::string::npos) << msg;
}

TEST(SafetensorsTest, UnsupportedDtypeIsNamed) {
  const std::string msg =
      open_error(with_header(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", "12345678"));
  EXPECT_NE(msg.find("unsupported dtype F64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace vllm
