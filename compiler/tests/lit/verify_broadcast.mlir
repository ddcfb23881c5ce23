// RUN: not vtpu-opt %s 2>&1 | FileCheck %s

// The lanes (last dimension) never move in a broadcast; only size-1 row dimensions repeat.
// CHECK: 'tpu.broadcast' op dimension 2 of size 1 cannot broadcast to 8
func.func @bad(%arg0: tensor<2x1x1xf32>) -> tensor<2x3x8xf32> {
  %0 = tpu.broadcast %arg0 {layer = "b"} : (tensor<2x1x1xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}
