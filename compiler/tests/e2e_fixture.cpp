// The presets and precisions every end-to-end test runs on (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

INSTANTIATE_TEST_SUITE_P(Presets, CompileE2E,
                         ::testing::Values(E2EParam{"tiny-8x8", Precision::Bf16}, E2EParam{"tiny-16x16", Precision::Bf16},
                                           E2EParam{"tpu-v4-core", Precision::Bf16}, E2EParam{"tiny-8x8", Precision::Int8},
                                           E2EParam{"tiny-16x16", Precision::Int8}, E2EParam{"tpu-v4-core", Precision::Int8}),
                         [](const auto& info) {
                           std::string s = info.param.preset + (info.param.precision == Precision::Int8 ? "_int8" : "_bf16");
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace vtpu::compiler
