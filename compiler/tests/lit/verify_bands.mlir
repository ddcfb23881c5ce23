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

// -----

// Bands of channels: channels [channel_start, channel_start + the band's) of its rows.
// CHECK: 'tpu.load_rows' op the band's channels are outside the tensor
func.func @load_channels_past_end(%arg0: tensor<1x8x4x32xf32>) -> tensor<1x2x4x16xf32> {
  %0 = tpu.load_rows %arg0 {axis = 1 : i64, start = 0 : i64, layer = "l", channel_start = 24 : i64} : (tensor<1x8x4x32xf32>) -> tensor<1x2x4x16xf32>
  return %0 : tensor<1x2x4x16xf32>
}

// -----

// CHECK: 'tpu.store_rows' op a band along the last dimension has no channel start
func.func @store_channels_on_their_axis(%arg0: tensor<1x1x1x8xf32>) -> tensor<1x1x1x32xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x1x1x32xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 3 : i64, start = 8 : i64, layer = "s", channel_start = 8 : i64} : (tensor<1x1x1x8xf32>, tensor<1x1x1x32xf32>) -> tensor<1x1x1x32xf32>
  return %1 : tensor<1x1x1x32xf32>
}

// -----

// A row step (a transposed convolution's phase, pipeline/band_subpixel.cpp): rows start,
// start + step, ...; 2 rows from row 1 with step 4 reach row 5 of 0..7, 3 would reach row 9.
// CHECK: 'tpu.store_rows' op the band's rows are outside the tensor
func.func @store_step_past_end(%arg0: tensor<1x3x4x3xf32>) -> tensor<1x8x4x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x4x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 1 : i64, layer = "s", row_step = 4 : i64} : (tensor<1x3x4x3xf32>, tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
  return %1 : tensor<1x8x4x3xf32>
}

// -----

// CHECK: 'tpu.store_rows' op the row step must be at least 1
func.func @store_step_zero(%arg0: tensor<1x2x4x3xf32>) -> tensor<1x8x4x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x4x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 0 : i64, layer = "s", row_step = 0 : i64} : (tensor<1x2x4x3xf32>, tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
  return %1 : tensor<1x8x4x3xf32>
}

// -----

// A tile (pipeline/band_tiles.cpp): a band of rows with some of the image's columns, from
// col_start; columns 3..6 of 0..4 are outside.
// CHECK: 'tpu.load_rows' op the band's columns are outside the tensor
func.func @load_tile_past_end(%arg0: tensor<1x8x5x3xf32>) -> tensor<1x2x4x3xf32> {
  %0 = tpu.load_rows %arg0 {axis = 1 : i64, start = 0 : i64, layer = "l", col_start = 3 : i64} : (tensor<1x8x5x3xf32>) -> tensor<1x2x4x3xf32>
  return %0 : tensor<1x2x4x3xf32>
}

// -----

// CHECK: 'tpu.store_rows' op a column start needs a band of some columns of an image's rows
func.func @store_whole_rows_at_a_column(%arg0: tensor<1x2x4x3xf32>) -> tensor<1x8x4x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x4x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 0 : i64, layer = "s", col_start = 1 : i64} : (tensor<1x2x4x3xf32>, tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
  return %1 : tensor<1x8x4x3xf32>
}

// -----

// A band of some channels inside the tensor is valid: no error.
// CHECK-NOT: error
func.func @load_channels(%arg0: tensor<1x8x4x32xf32>) -> tensor<1x2x4x16xf32> {
  %0 = tpu.load_rows %arg0 {axis = 1 : i64, start = 6 : i64, layer = "l", channel_start = 16 : i64} : (tensor<1x8x4x32xf32>) -> tensor<1x2x4x16xf32>
  return %0 : tensor<1x2x4x16xf32>
}

// -----

// CHECK-NOT: error
func.func @store_step(%arg0: tensor<1x2x4x3xf32>) -> tensor<1x8x4x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x4x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 1 : i64, layer = "s", row_step = 4 : i64} : (tensor<1x2x4x3xf32>, tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
  return %1 : tensor<1x8x4x3xf32>
}

// -----

// CHECK-NOT: error
func.func @store_tile(%arg0: tensor<1x2x3x3xf32>) -> tensor<1x8x5x3xf32> {
  %0 = tpu.hbm_tensor {layer = "s"} : tensor<1x8x5x3xf32>
  %1 = tpu.store_rows %arg0, %0 {axis = 1 : i64, start = 6 : i64, layer = "s", col_start = 2 : i64} : (tensor<1x2x3x3xf32>, tensor<1x8x5x3xf32>) -> tensor<1x8x5x3xf32>
  return %1 : tensor<1x8x5x3xf32>
}
