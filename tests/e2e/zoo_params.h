#pragma once
// Parameterising a test over the model zoo: every zoo model's name, and a test name made
// from it (gtest allows letters, digits and '_' only).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "vtpu/models/zoo.h"

namespace vtpu::testing {

inline std::vector<std::string> zoo_model_names() {
  std::vector<std::string> names;
  for (const auto& e : models::zoo()) names.push_back(e.name);
  return names;
}

inline std::string zoo_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace vtpu::testing
