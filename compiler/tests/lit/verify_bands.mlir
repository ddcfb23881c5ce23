// RUN: not vtpu-opt %s --split-input-file 2>&1 | FileCheck %s

// Row bands through HBM (compiler/pipeline/bands.cpp): a band is a contiguous piece of the
// row-major tensor, so every dimension before its axis is 1, and its rows lie inside.
// CHECK: 'tpu.load_rows' op every dimension before the axis must be 1
func.func @load_batch(%arg0: tensor<2x8x4x3xf32>) -> tensor<2x2x4x3xf32> {
  %0 = tpu.load_rows %arg0 {axis = 1 : i64, start = 0 : i64, layer = "l"} : (tensor<2x8x4x3xf32>) -> tensor<2x2x4x3xf32>
  return %0 : tensor<2x2x4x3xf32>
}

// -----

// CHECK: 'tpu.load_rows' op the band's rows are outside the tensor
func.func @load_past_end(%arg0: tensor<1x8x4x3xf32>) -> tensor<1x3x4x3xf32> {
  %0 = tpu.load_rows %arg0 {axis = 1 : i64, start = 6 : i64, layer = "l"} : (tensor<1x8x4x3xf32>) -> tensor<1x3x4x3xf32>
  return %0 : tensor<1x3x4x3xf32>
}

// -----

// CHECK: 'tpu.store_rows' op band and tensor differ outside the axis
func.func @store_width(%arg0: tensor<1x2x5x3xf32>) -> tensor<1x8x4x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x4x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 0 : i64, layer = "s"} : (tensor<1x2x5x3xf32>, tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
  return %1 : tensor<1x8x4x3xf32>
}

// -----

// CHECK: 'tpu.store_rows' op output must have the destination's shape
func.func @store_type(%arg0: tensor<1x2x4x3xf32>) -> tensor<1x9x4x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x4x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 0 : i64, layer = "s"} : (tensor<1x2x4x3xf32>, tensor<1x8x4x3xf32>) -> tensor<1x9x4x3xf32>
  return %1 : tensor<1x9x4x3xf32>
}
