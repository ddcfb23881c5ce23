func.func @f(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.floor %arg0 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("my_floor")
  return %0 : tensor<2x5xf32>
}
