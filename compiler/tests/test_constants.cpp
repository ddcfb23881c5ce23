// dialect/constants.h: how fp32 constants are made, read in place, and freed.
#include <gtest/gtest.h>

#include <numeric>

#include "dialect/constants.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "vtpu/support/error.h"

namespace vtpu::tpu {
namespace {

struct Constants : ::testing::Test {
  mlir::MLIRContext ctx;
  mlir::OpBuilder b{&ctx};
  mlir::OwningOpRef<mlir::ModuleOp> module;
  Constants() {
    ctx.loadDialect<mlir::func::FuncDialect, mlir::tosa::TosaDialect>();
    module = mlir::ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
  }
  mlir::RankedTensorType type(int64_t rows, int64_t cols) { return mlir::RankedTensorType::get({rows, cols}, b.getF32Type()); }
  static std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), -3.5f);
    return v;
  }
  mlir::Operation* constant(mlir::ElementsAttr a) {
    return b.create<mlir::tosa::ConstOp>(b.getUnknownLoc(), a.getShapedType(), a).getOperation();
  }
};

TEST_F(Constants, SmallOnesAreDenseAndUniqued) {
  auto t = type(4, 8);
  mlir::ElementsAttr a = f32_elements(t, ramp(32)), again = f32_elements(t, ramp(32));
  EXPECT_TRUE(mlir::isa<mlir::DenseElementsAttr>(a));
  EXPECT_EQ(a, again);  // uniqued: the same attribute
  EXPECT_EQ(float_values(a), ramp(32));
  EXPECT_TRUE(mlir::cast<mlir::DenseElementsAttr>(f32_elements(t, std::vector<float>(32, 2.0f))).isSplat());
  EXPECT_EQ(float_values(f32_elements(t, std::vector<float>(32, 2.0f))), std::vector<float>(32, 2.0f));
  EXPECT_FALSE(float_view(f32_elements(t, std::vector<float>(32, 2.0f))));  // a splat has no array to view
  FloatData splat = float_data(f32_elements(t, std::vector<float>(32, 2.0f)));  // so it is copied
  EXPECT_EQ(splat.values.data(), splat.held.data());
  EXPECT_EQ(std::vector<float>(splat.values.begin(), splat.values.end()), std::vector<float>(32, 2.0f));
}

TEST_F(Constants, LargeOnesAreBlobsThatTakeTheVectorOver) {
  size_t n = size_t(kBlobElements) * 2;
  std::vector<float> data = ramp(n);
  const float* where = data.data();
  mlir::ElementsAttr a = f32_elements(type(int64_t(n) / 64, 64), std::move(data));
  EXPECT_TRUE(mlir::isa<mlir::DenseResourceElementsAttr>(a));
  EXPECT_TRUE(is_f32_elements(a));
  auto view = float_view(a);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->data(), where) << "the blob should own the vector it was made from, not a copy";
  EXPECT_EQ(float_values(a), ramp(n));
  FloatData read = float_data(a);
  EXPECT_EQ(read.values.data(), where);  // read in place
  EXPECT_TRUE(read.held.empty());
  // Equal data makes another blob (no hash of the data to unique it).
  EXPECT_NE(a, f32_elements(type(int64_t(n) / 64, 64), ramp(n)));
  // All-equal large data reads back the same as a splat would.
  EXPECT_EQ(float_values(f32_elements(type(int64_t(n) / 64, 64), std::vector<float>(n, 0.25f))), std::vector<float>(n, 0.25f));
}

TEST_F(Constants, ErasingFreesBlobsNothingRefersTo) {
  size_t n = size_t(kBlobElements);
  mlir::ElementsAttr shared = f32_elements(type(int64_t(n), 1), ramp(n)), alone = f32_elements(type(int64_t(n), 1), ramp(n));
  mlir::Operation* first = constant(shared);
  mlir::Operation* clone = constant(shared);  // a second op on the same blob
  mlir::Operation* other = constant(alone);
  erase_constants(*module, {first, other});
  EXPECT_EQ(float_values(mlir::cast<mlir::tosa::ConstOp>(clone).getValue()), ramp(n)) << "a blob still referred to was freed";
  EXPECT_THROW(float_values(alone), InternalError);  // freed: a read after it is an internal error, not garbage
  EXPECT_EQ(std::distance(module->getBody()->begin(), module->getBody()->end()), 1);
}

TEST_F(Constants, ALayersLastReadFreesItsWeightsEarly) {
  size_t n = size_t(kBlobElements);
  auto t = type(int64_t(n), 1);
  mlir::Operation* w = constant(f32_elements(t, ramp(n)));
  mlir::Value wv = w->getResult(0);
  auto layer = [&](mlir::Value in) {  // any op reading the weights
    return b
        .create<mlir::tosa::ClampOp>(b.getUnknownLoc(), t, in, b.getI64IntegerAttr(0), b.getI64IntegerAttr(1),
                                     b.getF32FloatAttr(0), b.getF32FloatAttr(1))
        .getOperation();
  };
  mlir::Operation* first = layer(wv);
  mlir::Operation* second = layer(wv);
  release_consumed(*module, wv, first);  // another layer reads it too: kept
  EXPECT_EQ(float_values(mlir::cast<mlir::tosa::ConstOp>(w).getValue()), ramp(n));
  second->erase();
  mlir::Operation* clone = constant(mlir::cast<mlir::ElementsAttr>(mlir::cast<mlir::tosa::ConstOp>(w).getValue()));
  release_consumed(*module, wv, first);  // its only reader now, but a clone shares the blob: kept
  EXPECT_EQ(float_values(mlir::cast<mlir::tosa::ConstOp>(clone).getValue()), ramp(n));
  clone->erase();
  release_consumed(*module, wv, first);
  EXPECT_THROW(float_values(mlir::cast<mlir::tosa::ConstOp>(w).getValue()), InternalError);
}

TEST_F(Constants, ErasingDenseConstantsLeavesThemReadable) {
  mlir::ElementsAttr small = f32_elements(type(2, 2), ramp(4));
  erase_constants(*module, {constant(small)});
  EXPECT_EQ(float_values(small), ramp(4));  // uniqued attributes live with the context
}

}  // namespace
}  // namespace vtpu::tpu
