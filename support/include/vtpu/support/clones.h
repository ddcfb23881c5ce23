#pragma once
// VTPU_CLONES: a hot loop built twice, for x86-64-v3 (AVX2 and FMA: four doubles per
// operation; rounding in one instruction) and for the baseline, the one to run chosen when
// the program starts (GCC's target_clones). Only for loops whose results cannot depend on the
// build: IEEE operations round the same in both, and a multiply-add that may fuse must be
// exact either way (the product of two floats is exact in double).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VTPU_CLONES __attribute__((noinline, target_clones("arch=x86-64-v3", "default")))
#else
#define VTPU_CLONES __attribute__((noinline))
#endif
