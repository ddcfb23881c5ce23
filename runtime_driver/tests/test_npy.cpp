// .npy reading and writing, checked against bytes laid out by hand from NumPy's format spec.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "vtpu/runtime/npy.h"

namespace vtpu::runtime {
namespace {

namespace fs = std::filesystem;

TEST(Npy, WritesTheNumpyLayout) {
  fs::path p = fs::temp_directory_path() / "vtpu_npy_layout.npy";
  write_npy(p, {"<i4", {2, 3}, std::vector<uint8_t>(24, 7)});
  std::ifstream f(p, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), {});
  ASSERT_GE(all.size(), 10u);
  EXPECT_EQ(all.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t hlen = uint8_t(all[8]) | (size_t(uint8_t(all[9])) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);  // data is 64-byte aligned
  std::string header = all.substr(10, hlen);
  EXPECT_NE(header.find("'descr': '<i4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (2, 3)"), std::string::npos) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(all.size(), 10 + hlen + 24);
  fs::remove(p);
}

TEST(Npy, RoundTripsAndOneDimensionalTuple) {
  fs::path p = fs::temp_directory_path() / "vtpu_npy_rt.npy";
  NpyArray a{"|i1", {5}, {1, 2, 3, 250, 0}};
  write_npy(p, a);
  NpyArray b = read_npy(p);
  EXPECT_EQ(b.descr, "|i1");
  EXPECT_EQ(b.shape, std::vector<int64_t>{5});
  EXPECT_EQ(b.data, a.data);
  fs::remove(p);
}

TEST(Npy, RejectsMalformedFiles) {
  fs::path p = fs::temp_directory_path() / "vtpu_npy_bad.npy";
  std::ofstream(p) << "not numpy";
  EXPECT_THROW(read_npy(p), UserError);
  write_npy(p, {"<f4", {2}, std::vector<uint8_t>(8)});
  {  // truncate the data
    std::ifstream f(p, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    std::ofstream(p, std::ios::binary) << all.substr(0, all.size() - 3);
  }
  try {
    read_npy(p);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("data holds 5 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_npy("/nonexistent.npy"), UserError);
  fs::remove(p);
}

TEST(Npy, Bf16TensorsTravelAsFloat32) {
  // 1.0f = 0x3f800000, 1.00390625f = 0x3f808000 (a tie: rounds to even 0x3f80),
  // 1.01171875f = 0x3f818000 (a tie: rounds up to 0x3f82).
  std::vector<uint8_t> f32 = {0, 0, 0x80, 0x3f, 0, 0x80, 0x80, 0x3f, 0, 0x80, 0x81, 0x3f};
  auto bf = tensor_bytes_from_npy({"<f4", {3}, f32}, isa::Dtype::Bf16, {3}, "x", "x.npy");
  EXPECT_EQ(bf, (std::vector<uint8_t>{0x80, 0x3f, 0x80, 0x3f, 0x82, 0x3f}));
  NpyArray back = npy_from_tensor_bytes(bf, isa::Dtype::Bf16, {3});
  EXPECT_EQ(back.descr, "<f4");
  EXPECT_EQ(back.data, (std::vector<uint8_t>{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f, 0, 0, 0x82, 0x3f}));
}

TEST(Npy, ShapeAndTypeMismatchesAreClear) {
  try {
    tensor_bytes_from_npy({"<i4", {2, 2}, std::vector<uint8_t>(16)}, isa::Dtype::Int8, {2, 2}, "x", "x.npy");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' is int8"), std::string::npos) << e.what();
  }
  try {
    tensor_bytes_from_npy({"|i1", {3}, std::vector<uint8_t>(3)}, isa::Dtype::Int8, {2, 2}, "x", "x.npy");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("needs shape [2, 2]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtpu::runtime
