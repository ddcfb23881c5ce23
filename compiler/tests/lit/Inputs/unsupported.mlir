func.func @f(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tosa.sigmoid %arg0 : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("my_sigmoid")
  return %0 : tensor<2x5xf32>
}
