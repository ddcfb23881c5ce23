// Presets, defaults, canonical YAML, fingerprints, unit grammar and resolve().
#include "vtpu/config/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "schema_internal.h"
#include "test_util.h"
#include "units.h"
#include "vtpu/config/schema.h"

namespace vtpu::config {
namespace {

using testing::kMinimalYaml;
using testing::load_error;

TEST(Presets, ExpectedPresetsExist) {
  const std::vector<std::string> names = preset_names();
  for (const char* want : {"tpu-v1", "tpu-v4-core", "edge", "tiny-4x4", "tiny-8x8", "tiny-16x16"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(Presets, EveryPresetLoadsAndRoundTrips) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    const Config c = load_preset(name);
    EXPECT_EQ(c.name, name) << "a preset's name must match its file name";
    EXPECT_FALSE(c.source.empty()) << "every preset cites its source";
    const std::string yaml = to_yaml(c);
    const Config again = load_string(yaml, "roundtrip");
    EXPECT_EQ(again, c);
    EXPECT_EQ(fingerprint(again), fingerprint(c));
    EXPECT_EQ(to_yaml(again), yaml) << "canonical YAML must be a fixed point";
  }
}

TEST(Presets, EmbeddedCopiesMatchTheFiles) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    const auto path = testing::source_dir() / "configs" / "presets" / (name + ".yaml");
    EXPECT_EQ(load_file(path), load_preset(name));
  }
}

TEST(Presets, PresetsAreDistinct) {
  std::vector<uint64_t> prints;
  for (const std::string& name : preset_names()) prints.push_back(fingerprint(load_preset(name)));
  std::sort(prints.begin(), prints.end());
  EXPECT_EQ(std::adjacent_find(prints.begin(), prints.end()), prints.end());
}

// The preset reproduces the published TPU v1 figures (ANCHORS.md).
TEST(Presets, TpuV1MatchesThePaper) {
  const Config c = load_preset("tpu-v1");
  EXPECT_NEAR(peak_ops_per_s_per_chip(c), 92e12, 0.5e12);    // 92 TOPS
  EXPECT_EQ(accumulator_bytes(c), 4u << 20);                 // 4 MiB
  EXPECT_EQ(c.core.unified_buffer.bytes, 24u << 20);         // 24 MiB
  EXPECT_EQ(weight_tile_bytes(c, DType::kInt8), 64u << 10);  // 64 KiB tiles
  EXPECT_EQ(c.core.mxu.weight_shift_cycles, 256u);
  EXPECT_EQ(c.core.mxu.weight_fifo_tiles, 4u);
  EXPECT_EQ(c.memory.kind, MemoryKind::kDdr3);
  EXPECT_EQ(c.memory.channels, 2u);
  // Roofline ridge: 1350 MACs per weight byte.
  const double macs_per_s = peak_ops_per_s_per_chip(c) / 2;
  EXPECT_NEAR(macs_per_s / (c.memory.bandwidth_gbytes_per_s * 1e9), 1350, 5);
  EXPECT_TRUE(supports(c, DType::kInt8));
  EXPECT_FALSE(supports(c, DType::kBf16));
  EXPECT_EQ(c.energy.node_nm, 28);
}

TEST(Presets, TpuV4MatchesPublishedFigures) {
  const Config c = load_preset("tpu-v4-core");
  EXPECT_NEAR(peak_ops_per_s_per_chip(c), 275e12, 0.5e12);  // 275 TFLOPS per chip
  EXPECT_EQ(c.core.mxu.count, 4u);
  EXPECT_EQ(c.core.mxu.rows, 128u);
  EXPECT_EQ(c.core.unified_buffer.bytes, 16u << 20);
  EXPECT_EQ(c.core.vector.lanes * c.core.vector.sublanes, 128u * 8);
  EXPECT_EQ(c.memory.bandwidth_gbytes_per_s, 1200);
  EXPECT_EQ(c.ici.links, 6u);
  EXPECT_EQ(c.ici.link_bandwidth_gbytes_per_s, 50);  // ISCA 2023, Table 4
  // A run on this preset simulates one chip (issue 16); the slices below are its pods.
  EXPECT_EQ(c.ici.shape, (std::vector<uint32_t>{1}));
  EXPECT_EQ(c.system.chips, 1u);
  EXPECT_TRUE(supports(c, DType::kBf16));
  EXPECT_TRUE(supports(c, DType::kInt8));
  EXPECT_EQ(c.energy.node_nm, 7);
}

// The v4 slices are the tpu-v4-core chip in a torus: only the chip count and ICI differ, so
// the copies of the chip's sections in their YAML files cannot drift apart.
TEST(Presets, TpuV4SlicesAreTheV4CoreChipInATorus) {
  const Config core = load_preset("tpu-v4-core");
  for (auto [name, shape] : {std::pair{"tpu-v4-2x2x2", std::vector<uint32_t>{2, 2, 2}},
                             std::pair{"tpu-v4-4x4x4", std::vector<uint32_t>{4, 4, 4}},
                             std::pair{"tpu-v4-16x16x16", std::vector<uint32_t>{16, 16, 16}}}) {
    SCOPED_TRACE(name);
    const Config c = load_preset(name);
    EXPECT_EQ(c.ici.shape, shape);
    EXPECT_EQ(c.system.chips, shape[0] * shape[1] * shape[2]);
    EXPECT_TRUE(c.ici.wraparound);
    EXPECT_EQ(c.ici.links, 6u);
    EXPECT_EQ(c.ici.link_bandwidth_gbytes_per_s, core.ici.link_bandwidth_gbytes_per_s);
    EXPECT_EQ(c.ici.link_latency_ns, core.ici.link_latency_ns);
    EXPECT_EQ(c.clock_mhz, core.clock_mhz);
    EXPECT_EQ(c.system.cores_per_chip, core.system.cores_per_chip);
    EXPECT_TRUE(c.core == core.core);
    EXPECT_TRUE(c.memory == core.memory);
    EXPECT_TRUE(c.energy == core.energy);
  }
}

TEST(Presets, TpuV5eLikeMatchesPublishedFigures) {
  const Config c = load_preset("tpu-v5e-like-16x16");
  EXPECT_NEAR(peak_ops_per_s_per_chip(c), 197e12, 0.5e12);  // 197 TFLOPS bf16
  EXPECT_EQ(c.system.chips, 256u);
  EXPECT_EQ(c.ici.shape, (std::vector<uint32_t>{16, 16}));
  EXPECT_EQ(c.ici.links, 4u);
  // 400 GB/s bidirectional per chip over 4 links.
  EXPECT_EQ(4 * 2 * c.ici.link_bandwidth_gbytes_per_s, 400);
  EXPECT_EQ(c.memory.bandwidth_gbytes_per_s, 819);
}

TEST(Presets, TinyPresetsAreSmallSingleChipAndSupportBothTypes) {
  for (const char* name : {"tiny-4x4", "tiny-8x8", "tiny-16x16"}) {
    SCOPED_TRACE(name);
    const Config c = load_preset(name);
    EXPECT_EQ(c.system.chips, 1u);
    EXPECT_TRUE(supports(c, DType::kInt8));
    EXPECT_TRUE(supports(c, DType::kBf16));
    EXPECT_GE(c.core.unified_buffer.bytes, 64u << 10);
    EXPECT_LE(c.core.unified_buffer.bytes, 256u << 10);
    EXPECT_LE(c.memory.channels, 4u);
  }
}

TEST(Defaults, MinimalConfigGetsEveryDefault) {
  const Config c = load_string(kMinimalYaml, "minimal.yaml");
  EXPECT_EQ(c.schema_version, 1u);
  EXPECT_EQ(c.description, "");
  EXPECT_EQ(c.system.chips, 1u);
  EXPECT_EQ(c.system.cores_per_chip, 1u);
  EXPECT_EQ(c.core.mxu.count, 1u);
  EXPECT_EQ(c.core.mxu.weight_fifo_tiles, 2u);
  EXPECT_EQ(c.core.mxu.weight_shift_cycles, 32u);         // = rows
  EXPECT_EQ(c.core.unified_buffer.row_bytes, 64u);        // rows x 2 bytes (bf16)
  EXPECT_EQ(c.core.unified_buffer.alignment_bytes, 4u);  // = min(4, row_bytes)
  EXPECT_EQ(c.core.vector.lanes, 16u);                    // = cols
  EXPECT_EQ(c.core.vector.latency_cycles.transcendental, 12u);
  EXPECT_EQ(c.core.scalar.smem_bytes, 16u << 10);
  EXPECT_EQ(c.memory.burst_bytes, 64u);  // hbm2
  EXPECT_EQ(c.memory.banks_per_channel, 16u);
  EXPECT_EQ(c.memory.row_bytes, 2048u);
  EXPECT_EQ(c.memory.t_rcd_ns, 14);
  EXPECT_EQ(c.memory.page_policy, PagePolicy::kOpen);
  EXPECT_EQ(c.ici.shape, std::vector<uint32_t>{1});
  EXPECT_TRUE(c.ici.wraparound);
  EXPECT_EQ(c.energy.node_nm, 45);
  EXPECT_DOUBLE_EQ(c.energy.mac_pj.int8, 0.3);  // Horowitz: 0.2 (8b mul) + 0.1 (32b add)
  EXPECT_DOUBLE_EQ(c.energy.mac_pj.bf16, 1.5);  // 5 x int8
  EXPECT_DOUBLE_EQ(c.energy.vector_mul_pj.fp32, 3.7);
  EXPECT_DOUBLE_EQ(c.energy.dram_pj_per_bit, 5.5);
  ASSERT_EQ(c.energy.sram_pj_per_64b.size(), 3u);
  EXPECT_EQ(c.energy.sram_pj_per_64b[2].bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(c.energy.sram_pj_per_64b[2].pj, 100);
}

TEST(Defaults, DerivedDefaultsFollowTheirInputs) {
  std::string yaml = kMinimalYaml;
  yaml.replace(yaml.find("[int8, bf16]"), 12, "[int8]");
  yaml.replace(yaml.find("kind: hbm2"), 10, "kind: ddr3");
  const Config c = load_string(yaml, "t.yaml");
  EXPECT_EQ(c.core.unified_buffer.row_bytes, 32u);  // int8 only: 1 byte per element
  EXPECT_EQ(c.memory.row_bytes, 8192u);
  EXPECT_DOUBLE_EQ(c.energy.dram_pj_per_bit, 20.3);
}

TEST(Defaults, ExplicitValuesOverrideDerivedOnes) {
  const Config c = load_string(std::string(kMinimalYaml) + R"(energy:
  node_nm: 7
  mac_pj:
    int8: 0.25
)",
                               "t.yaml");
  EXPECT_DOUBLE_EQ(c.energy.mac_pj.int8, 0.25);
  EXPECT_DOUBLE_EQ(c.energy.mac_pj.bf16, 0.525);  // still scaled to 7 nm
}

TEST(Canonical, YamlListsEveryKeyInSchemaOrder) {
  const std::string yaml = to_yaml(load_preset("tpu-v4-core"));
  size_t pos = 0;
  for (const KeyInfo& k : schema_keys()) {
    const std::string_view path = k.path;
    const std::string leaf(
        path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1));
    const size_t at = yaml.find(leaf + ":", pos);
    ASSERT_NE(at, std::string::npos) << path;
    pos = at;
  }
  EXPECT_NE(yaml.find("shape: [1]"), std::string::npos);  // tpu-v4-core is one chip; its slices are presets
  EXPECT_NE(to_yaml(load_preset("tpu-v4-4x4x4")).find("shape: [4, 4, 4]"), std::string::npos);
  EXPECT_NE(yaml.find("bytes: 16MiB"), std::string::npos);
  EXPECT_NE(yaml.find("- {bytes: 8KiB, pj: 7.5}"), std::string::npos);
}

TEST(Canonical, StringsWithSpecialCharactersRoundTrip) {
  std::string yaml = kMinimalYaml;
  yaml +=
      "description: \"quotes \\\" backslash \\\\ colon: tab\\t newline\\n unicode \u00b5s #x\"\n";
  const Config c = load_string(yaml, "t.yaml");
  EXPECT_EQ(c.description, "quotes \" backslash \\ colon: tab\t newline\n unicode \u00b5s #x");
  EXPECT_EQ(load_string(to_yaml(c), "again"), c);
}

TEST(Canonical, InputSpellingDoesNotChangeTheFingerprint) {
  std::string a = kMinimalYaml;
  std::string b = kMinimalYaml;
  b.replace(b.find("256KiB"), 6, "262144");
  b.replace(b.find("1GiB"), 4, "1024 MiB");
  b.replace(b.find("bandwidth_gbytes_per_s: 100"), 27, "bandwidth_gbytes_per_s: 0.1TB/s");
  b.replace(b.find("clock_mhz: 1000"), 15, "clock_mhz: 1GHz");
  EXPECT_EQ(fingerprint(load_string(a, "a")), fingerprint(load_string(b, "b")));
}

// Mutates each schema field in turn (through the schema's own slots, so new fields are
// covered automatically) and checks that the fingerprint and equality notice.
TEST(Canonical, FingerprintChangesWhenAnyFieldChanges) {
  const Config base = load_preset("tpu-v4-core");
  const uint64_t base_print = fingerprint(base);
  for (const detail::Field& f : detail::fields()) {
    SCOPED_TRACE(std::string(f.info.path));
    Config c = base;
    const detail::Slot slot = f.slot(c);
    std::visit(
        [](auto* p) {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, std::string>) {
            *p += "x";
          } else if constexpr (std::is_same_v<T, bool>) {
            *p = !*p;
          } else if constexpr (std::is_same_v<T, MemoryKind>) {
            *p = *p == MemoryKind::kHbm2 ? MemoryKind::kDdr3 : MemoryKind::kHbm2;
          } else if constexpr (std::is_same_v<T, PagePolicy>) {
            *p = *p == PagePolicy::kOpen ? PagePolicy::kClosed : PagePolicy::kOpen;
          } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
            p->pop_back();
          } else if constexpr (std::is_same_v<T, std::vector<uint32_t>>) {
            if (p->empty()) p->push_back(1);  // ici.twist: none on the base
            else p->back() += 1;
          } else if constexpr (std::is_same_v<T, std::vector<SramPoint>>) {
            p->back().pj += 0.5;
          } else {
            *p = *p + 1;
          }
        },
        slot);
    EXPECT_NE(c, base);
    EXPECT_NE(fingerprint(c), base_print);
  }
}

TEST(Canonical, FingerprintIsFnv1aOfTheCanonicalYaml) {
  const Config c = load_preset("tiny-4x4");
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : to_yaml(c)) h = (h ^ ch) * 0x100000001b3ull;
  EXPECT_EQ(fingerprint(c), h);
}

TEST(Units, QuantitiesConvertToTheKeyUnit) {
  struct Case {
    const char* text;
    KeyType type;
    double want;
  };
  const Case cases[] = {
      {"4096", KeyType::kBytes, 4096},
      {"4 KiB", KeyType::kBytes, 4096},
      {"24MiB", KeyType::kBytes, 24 << 20},
      {"1.5MiB", KeyType::kBytes, 1536 << 10},
      {"8GiB", KeyType::kBytes, 8.0 * (1 << 30)},
      {"512B", KeyType::kBytes, 512},
      {"1.2TB/s", KeyType::kBandwidth, 1200},
      {"34 GB/s", KeyType::kBandwidth, 34},
      {"900MB/s", KeyType::kBandwidth, 0.9},
      {"1GiB/s", KeyType::kBandwidth, 1.073741824},
      {"15", KeyType::kTime, 15},
      {"1.5us", KeyType::kTime, 1500},
      {"800ps", KeyType::kTime, 0.8},
      {"1.05GHz", KeyType::kFrequency, 1050},
      {"700 MHz", KeyType::kFrequency, 700},
      {"350mW", KeyType::kPower, 0.35},
      {"1.3nJ", KeyType::kEnergy, 1300},
      {"30fJ", KeyType::kEnergy, 0.03},
      {"+2.5e1", KeyType::kNumber, 25},
  };
  for (const Case& c : cases) {
    double got = -1;
    EXPECT_EQ(detail::parse_quantity(c.text, c.type, got), "") << c.text;
    EXPECT_NEAR(got, c.want, 1e-9 * std::max(1.0, c.want)) << c.text;
  }
}

TEST(Units, BadQuantitiesSayWhy) {
  struct Case {
    const char* text;
    KeyType type;
    const char* phrase;
  };
  const Case cases[] = {
      {"24MB", KeyType::kBytes, "ambiguous size unit 'MB'"},
      {"24 mib", KeyType::kBytes, "unknown unit 'mib'"},
      {"1.3KiB", KeyType::kBytes, "not a whole number of bytes"},
      {"-4KiB", KeyType::kBytes, "negative size"},
      {"34Gb/s", KeyType::kBandwidth, "unknown unit 'Gb/s'"},
      {"fast", KeyType::kBandwidth, "expected a bandwidth"},
      {"inf", KeyType::kTime, "expected a duration"},
      {"5 parsecs", KeyType::kTime, "unknown unit 'parsecs'"},
      {"3nm", KeyType::kNumber, "without a unit"},
  };
  for (const Case& c : cases) {
    double got = 0;
    EXPECT_NE(detail::parse_quantity(c.text, c.type, got).find(c.phrase), std::string::npos)
        << c.text << " -> " << detail::parse_quantity(c.text, c.type, got);
  }
}

TEST(Units, SizesPrintInTheLargestExactBinaryUnit) {
  EXPECT_EQ(detail::format_bytes(24u << 20), "24MiB");
  EXPECT_EQ(detail::format_bytes(1536), "1536");
  EXPECT_EQ(detail::format_bytes(3u << 10), "3KiB");
  EXPECT_EQ(detail::format_bytes(uint64_t{32} << 30), "32GiB");
}

TEST(Errors, WhatNamesFileLineColumnKeyValueAndRange) {
  std::string yaml = kMinimalYaml;
  yaml.replace(yaml.find("rows: 32"), 8, "rows: 0");
  const ConfigError e = load_error(yaml, "chip.yaml");
  EXPECT_EQ(e.file(), "chip.yaml");
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.column(), 11);
  EXPECT_EQ(e.key(), "core.mxu.rows");
  EXPECT_EQ(e.value(), "0");
  EXPECT_EQ(e.allowed(), "[1, 4096]");
  const std::string what = e.what();
  EXPECT_EQ(what.substr(0, what.find('\n')),
            "chip.yaml:5:11: error: key 'core.mxu.rows': value 0 out of range [1, 4096]");
  EXPECT_NE(what.find("\n  hint: "), std::string::npos);
}

TEST(Errors, ConfigErrorIsAUserError) {
  try {
    load_string("name: x\n", "x.yaml");
    FAIL();
  } catch (const vtpu::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("missing required key"), std::string::npos);
  }
}

TEST(Errors, RequireDtypeNamesWhatIsSupported) {
  const Config c = load_preset("tpu-v1");
  EXPECT_NO_THROW(require_dtype(c, DType::kInt8));
  try {
    require_dtype(c, DType::kBf16);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "core.mxu.dtypes");
    EXPECT_NE(std::string(e.what()).find("does not support bf16"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("int8"), std::string::npos);
  }
}

TEST(Resolve, PresetNamesAndPaths) {
  EXPECT_EQ(resolve("tpu-v1"), load_preset("tpu-v1"));
  const auto path = testing::source_dir() / "configs" / "presets" / "edge.yaml";
  EXPECT_EQ(resolve(path.string()), load_preset("edge"));
}

TEST(Resolve, WorksFromAnyDirectory) {
  const auto here = std::filesystem::current_path();
  std::filesystem::current_path(std::filesystem::temp_directory_path());
  EXPECT_EQ(resolve("tiny-8x8").name, "tiny-8x8");
  std::filesystem::current_path(here);
}

TEST(Resolve, UnknownPresetListsThePresets) {
  try {
    resolve("tpu-v2");
    FAIL();
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown preset 'tpu-v2'"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'tpu-v1'"), std::string::npos) << what;
    for (const std::string& name : preset_names()) {
      EXPECT_NE(what.find(name), std::string::npos) << what;
    }
  }
}

TEST(Resolve, MissingYamlFileIsAFileError) {
  try {
    resolve("no/such/chip.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "no/such/chip.yaml");
    EXPECT_NE(std::string(e.what()).find("cannot open config file"), std::string::npos);
  }
  try {
    load_file(std::filesystem::temp_directory_path());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
}

TEST(Schema, KeysAreUniqueAndSectionsContiguous) {
  std::vector<std::string> seen_sections;
  std::string current;
  std::vector<std::string> paths;
  for (const KeyInfo& k : schema_keys()) {
    paths.emplace_back(k.path);
    const std::string_view p = k.path;
    const std::string section(p.substr(0, p.find('.') == std::string_view::npos ? 0 : p.find('.')));
    if (section != current) {
      EXPECT_EQ(std::find(seen_sections.begin(), seen_sections.end(), section), seen_sections.end())
          << "section " << section << " is split; to_yaml would print it twice";
      seen_sections.push_back(section);
      current = section;
    }
    EXPECT_FALSE(k.doc.empty()) << k.path;
    EXPECT_TRUE(k.required || !k.default_text.empty()) << k.path;
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(std::adjacent_find(paths.begin(), paths.end()), paths.end());
}

}  // namespace
}  // namespace vtpu::config
