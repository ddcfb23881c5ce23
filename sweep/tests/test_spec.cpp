#include <gtest/gtest.h>

#include "vtpu/sweep/spec.h"

TEST(SweepSpec, Placeholder) { SUCCEED(); }
