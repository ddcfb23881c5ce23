#pragma once
// The zoo's model generators, one file per family (zoo_dense.cpp, zoo_cnn.cpp,
// zoo_transformer.cpp); zoo.cpp lists them and writes their ONNX files.
#include <cmath>
#include <cstdint>

#include "vtpu/models/onnx_builder.h"

namespace vtpu::models::builders {

using testing::OnnxBuilder;

// He-style uniform bound so activations keep their scale through ReLU layers.
inline float he(int64_t fan_in) { return std::sqrt(6.0f / float(fan_in)); }

// TPU v1's six applications (Jouppi et al., ISCA 2017, Table 1) and the GEMM figure.
void mlp0(OnnxBuilder& m);
void mlp1(OnnxBuilder& m);
void lstm0(OnnxBuilder& m);
void lstm1(OnnxBuilder& m);
void cnn0(OnnxBuilder& m);
void cnn1(OnnxBuilder& m);
void gemm2048(OnnxBuilder& m);

void lenet5(OnnxBuilder& m);
void resnet50(OnnxBuilder& m);
void mobilenetv2(OnnxBuilder& m);

void bert_base(OnnxBuilder& m, int layers);
void bert_base_ids(OnnxBuilder& m, int layers);
void gpt2_block(OnnxBuilder& m);

}  // namespace vtpu::models::builders
