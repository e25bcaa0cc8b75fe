#include "model/loader/safetensors.h"

#include <gtest/gtest.h>

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

TEST(SafetensorsTest, MissingFileIsNamed) {
  Result<SafetensorsFile> f = SafetensorsFile::open("/nonexistent/x.safetensors");
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().message(), "/nonexistent/x.safetensors: file not found");
}

TEST(SafetensorsTest, FileShorterThanLengthPrefixIsTruncated) {
  TempDir dir;
  write_file(dir.file("t.safetensors"), "abc");
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("truncated: 3 bytes, too short for a safetensors header"), std::string::npos)
      << f.status().message();
}

TEST(SafetensorsTest, HeaderCutShortIsTruncated) {
  TempDir dir;
  const std::string full = with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd");
  write_file(dir.file("t.safetensors"), full.substr(0, 30));
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("truncated: the header declares 54 bytes but only 22 follow"), std::string::npos)
      << f.status().message();
}

TEST(SafetensorsTest, CorruptHeaderJsonIsReported) {
  TempDir dir;
  write_file(dir.file("t.safetensors"), with_header("{not json", ""));
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find("safetensors header): invalid JSON"), std::string::npos) << f.status().message();
}

TEST(SafetensorsTest, HugeDeclaredHeaderIsCorrupt) {
  TempDir dir;
  std::string bytes(16, '\xff');
  write_file(dir.file("t.safetensors"), bytes);
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("corrupt safetensors header"), std::string::npos) << f.status().message();
}

TEST(SafetensorsTest, DataBeyondTheFileIsTruncated) {
  TempDir dir;
  write_file(dir.file("t.safetensors"),
             with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "12345678"));
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("tensor 'w': data range [0, 16) lies outside the 8 data bytes"),
            std::string::npos)
      << f.status().message();
}

TEST(SafetensorsTest, SizeMustMatchShape) {
  TempDir dir;
  write_file(dir.file("t.safetensors"),
             with_header(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", "12345678"));
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("8 bytes do not hold shape [3] of BF16"), std::string::npos)
      << f.status().message();
}

TEST(SafetensorsTest, UnsupportedDtypeIsNamed) {
  TempDir dir;
  write_file(dir.file("t.safetensors"),
             with_header(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", "12345678"));
  Result<SafetensorsFile> f = SafetensorsFile::open(dir.file("t.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("unsupported dtype F64"), std::string::npos) << f.status().message();
}

}  // namespace
}  // namespace vllm
