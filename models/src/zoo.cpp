#include "vtpu/models/zoo.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "vtpu/support/error.h"
#include "zoo_builders.h"

namespace vtpu::models {
namespace embedded {
extern const uint8_t lenet5_fmnist[];
extern const size_t lenet5_fmnist_size;
}  // namespace embedded
using namespace builders;

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> z = {
      {"mlp0", "5 fully connected layers of 2000, 20M weights, batch 200, seeded weights",
       "TPU v1's MLP0 (Jouppi et al., ISCA 2017, Table 1)", "tpu-v1", "int8"},
      {"lenet5", "LeNet-5 on 28x28 images (2 conv, 2 max pool, 3 fully connected, softmax), seeded weights",
       "LeCun et al. 1998; the Fashion-MNIST-trained weights are not in the zoo yet", "tiny-16x16", "bf16"},
      {"resnet50", "ResNet-50 v1.5 on 224x224 images (53 conv layers with batch norm, 16 residual adds, 25.6M weights), seeded weights",
       "He et al. 2016 (torchvision's resnet50)", "tpu-v1", "int8", "", "imagenet"},
      {"lenet5-fmnist", "LeNet-5 trained on Fashion-MNIST (models/scripts/train_lenet_fmnist.py): 88.8% fp32 test accuracy",
       "LeCun et al. 1998; weights from Debian's python3-torch, seed 0, 4 epochs", "tiny-16x16", "int8", "fashion-mnist"},
      {"mobilenetv2", "MobileNetV2 1.0 on 224x224 images (17 inverted residual blocks with depthwise 3x3 convs, ReLU6, 3.5M weights), seeded weights",
       "Sandler et al. 2018 (torchvision's mobilenet_v2)", "tpu-v4-core", "int8", "", "imagenet"},
      {"lstm0", "6 stacked LSTM layers of 1024 cells + output projection, 51.4M weights, batch 64, 8 time steps, seeded weights",
       "TPU v1's LSTM0 (Jouppi et al., ISCA 2017, Table 1: 52M weights, batch 64)", "tpu-v1", "int8"},
      {"mlp1", "4 fully connected layers of 1120, 5.0M weights, batch 168, seeded weights",
       "TPU v1's MLP1 (Jouppi et al., ISCA 2017, Table 1: 4 FC layers, 5M weights, batch 168); widths are vtpu's choice",
       "tpu-v1", "int8"},
      {"lstm1", "12 stacked LSTM layers of 600 cells, 34.6M weights, batch 96, 8 time steps, seeded weights",
       "TPU v1's LSTM1 (Jouppi et al., ISCA 2017, Table 1: 34M weights, batch 96; section 7: 600 x 600 matrices)",
       "tpu-v1", "int8"},
      {"cnn0", "16 conv layers on the 19x19 Go board (48 planes, 5x5 then 14 3x3 convs of 256 channels, 1x1 to move logits), 8.6M weights, batch 8, seeded weights",
       "TPU v1's CNN0 (Jouppi et al., ISCA 2017, Table 1: 16 conv, 8M weights, batch 8; AlphaGo's policy network, Silver et al. 2016)",
       "tpu-v1", "int8"},
      {"cnn1", "Inception on 280x280 images: 72 conv (BN-Inception's 10 modules behind a 6-conv stem), 13 pool, 4 FC layers to 12800 classes, 100.8M weights, batch 1 in the file (the paper's 32: --batch 32), seeded weights",
       "TPU v1's CNN1 (Jouppi et al., ISCA 2017, Table 1: 72 conv, 13 pool, 4 FC, 100M weights, batch 32); shapes are vtpu's choice (docs/validation.md)",
       "tpu-v1", "int8", "", "imagenet"},
      {"bert-base", "BERT-base encoder: 12 layers (hidden 768, 12 heads, feed-forward 3072, GELU, layer norm), sequence 128, 85M weights, seeded",
       "Devlin et al. 2019 (Hugging Face's bert-base-uncased encoder, without the embedding lookup)", "tpu-v4-core", "bf16"},
      {"bert-base-layer", "one BERT-base encoder layer (sequence 128), the unit the compiler's transformer figures are measured on",
       "Devlin et al. 2019", "tpu-v4-core", "bf16"},
      {"bert-base-ids", "BERT-base from token ids: int64 input_ids and token_type_ids through the word (30522 x 768), token-type and position embeddings and layer norm, then the 12 encoder layers; 109M weights, seeded",
       "Devlin et al. 2019 (Hugging Face's bert-base-uncased BertModel, without the pooler)", "tpu-v4-core", "bf16"},
      {"bert-base-ids-layer", "the embeddings of bert-base-ids (token ids in) and one encoder layer",
       "Devlin et al. 2019", "tpu-v4-core", "bf16"},
      {"gpt2-block", "one GPT-2 small decoder block: causal self-attention (768, 12 heads), tanh-GELU MLP 3072, pre-layer-norm, 128 tokens, 7M weights, seeded",
       "Radford et al. 2019 (Hugging Face's gpt2, one of its 12 blocks)", "tpu-v4-core", "bf16"},
      {"gemm2048", "one 2048 x 2048 x 2048 matrix multiply (activation x constant weights), seeded weights",
       "the GEMM the compiler's roofline figures are measured on", "tpu-v4-core", "bf16"},
  };
  return z;
}

const ZooEntry* find(const std::string& name) {
  for (const auto& e : zoo())
    if (e.name == name) return &e;
  return nullptr;
}

std::filesystem::path default_dir() {
  if (const char* d = std::getenv("VTPU_MODEL_DIR")) return d;
  // Versioned: a model cached by an older build is not reused after the zoo changes.
  return std::filesystem::temp_directory_path() / "vtpu-zoo-3";
}

std::filesystem::path materialize(const std::string& name, const std::filesystem::path& dir) {
  const ZooEntry* e = find(name);
  if (!e) {
    std::string names;
    for (const auto& z : zoo()) names += " " + z.name;
    throw UserError(fmt::format("'{}' is neither a model file nor a zoo model; the zoo has:{} (vtpu models)", name, names));
  }
  std::filesystem::create_directories(dir);
  auto path = dir / (name + ".onnx");
  if (std::filesystem::exists(path)) return path;
  if (name == "lenet5-fmnist") {  // trained, shipped inside the library
    auto tmp = dir / fmt::format("{}.onnx.{}.partial", name, ::getpid());
    std::ofstream(tmp, std::ios::binary)
        .write(reinterpret_cast<const char*>(embedded::lenet5_fmnist), std::streamsize(embedded::lenet5_fmnist_size));
    std::filesystem::rename(tmp, path);
    return path;
  }
  bool opset17 = name.rfind("bert", 0) == 0 || name.rfind("gpt2", 0) == 0 || name == "lstm0" ||
                 name == "lstm1";  // LayerNormalization, LSTM layout
  OnnxBuilder m(opset17 ? 17 : 13, /*seed=*/20261130);
  if (name == "mlp0") mlp0(m);
  else if (name == "lenet5") lenet5(m);
  else if (name == "gemm2048") gemm2048(m);
  else if (name == "resnet50") resnet50(m);
  else if (name == "mobilenetv2") mobilenetv2(m);
  else if (name == "bert-base") bert_base(m, 12);
  else if (name == "bert-base-layer") bert_base(m, 1);
  else if (name == "bert-base-ids") bert_base_ids(m, 12);
  else if (name == "bert-base-ids-layer") bert_base_ids(m, 1);
  else if (name == "gpt2-block") gpt2_block(m);
  else if (name == "lstm0") lstm0(m);
  else if (name == "mlp1") mlp1(m);
  else if (name == "lstm1") lstm1(m);
  else if (name == "cnn0") cnn0(m);
  else if (name == "cnn1") cnn1(m);
  // Write under a name of this process first, then rename (atomic): concurrent runs never
  // see a half-written model.
  auto tmp = dir / fmt::format("{}.onnx.{}.partial", name, ::getpid());
  m.save_to(tmp);
  std::filesystem::rename(tmp, path);
  return path;
}

}  // namespace vtpu::models
