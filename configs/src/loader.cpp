// YAML text -> validated Config. Walks the document against the schema table, so every
// key is checked for name, type and range where it is written, then fills defaults and
// runs the checks that involve several keys.
#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "embedded_presets.h"
#include "schema_internal.h"
#include "units.h"
#include "vtpu/config/topology.h"
#include "vtpu/support/spelling.h"

namespace vtpu::config {
namespace {

using detail::Field;
using detail::Slot;

std::string format_error(const ConfigError::Details& d) {
  std::string s;
  if (!d.file.empty()) {
    s += d.file;
    if (d.line > 0) s += fmt::format(":{}:{}", d.line, d.column);
    s += ": ";
  }
  s += "error: ";
  if (!d.key.empty()) s += fmt::format("key '{}': ", d.key);
  s += d.message;
  if (!d.hint.empty()) s += "\n  hint: " + d.hint;
  return s;
}

struct Loc {
  int line = 0;  // 1-based; 0 = unknown
  int column = 0;
};

Loc loc_of(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

std::string parent_of(std::string_view path) {
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? "" : std::string(path.substr(0, dot));
}

std::string last_of(std::string_view path) {
  const size_t dot = path.rfind('.');
  return std::string(dot == std::string_view::npos ? path : path.substr(dot + 1));
}

// Lookup structures derived from the schema table once.
struct SchemaIndex {
  std::unordered_map<std::string, const Field*> leaves;
  std::map<std::string, std::vector<std::string>> children;  // section -> child names

  SchemaIndex() {
    for (const Field& f : detail::fields()) {
      const std::string path(f.info.path);
      leaves[path] = &f;
      std::string child = path;
      for (std::string parent = parent_of(path);; parent = parent_of(parent)) {
        auto& names = children[parent];
        const std::string name = last_of(child);
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        if (parent.empty()) break;
        child = parent;
      }
    }
  }
  bool is_section(const std::string& path) const { return children.count(path) > 0; }
};

const SchemaIndex& schema_index() {
  static const SchemaIndex kIndex;
  return kIndex;
}

std::string_view node_kind(const YAML::Node& n) {
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  if (n.IsNull()) return "nothing";
  return "a scalar";
}

std::string_view expected_noun(KeyType t) {
  switch (t) {
    case KeyType::kString: return "a string";
    case KeyType::kInt: return "an integer";
    case KeyType::kNumber: return "a number";
    case KeyType::kBool: return "true or false";
    case KeyType::kBytes: return "a size (e.g. 24MiB)";
    case KeyType::kBandwidth: return "a bandwidth (e.g. 34GB/s)";
    case KeyType::kTime: return "a duration (e.g. 15ns)";
    case KeyType::kFrequency: return "a frequency (e.g. 700MHz)";
    case KeyType::kPower: return "a power (e.g. 40W)";
    case KeyType::kEnergy: return "an energy (e.g. 0.3pJ)";
    case KeyType::kEnum: return "a name";
    case KeyType::kEnumList: return "a list such as [int8, bf16]";
    case KeyType::kIntList: return "a list of integers such as [4, 4, 4]";
    case KeyType::kSramTable: return "a list of {bytes: SIZE, pj: ENERGY} items";
  }
  return "a value";
}

// "core.mxu.rows: PE rows = ..." -- appended to hints so the user sees what the key means.
std::string about(const KeyInfo& k) { return fmt::format("{}: {}", k.path, k.doc); }

std::string shape_text(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class Loader {
 public:
  explicit Loader(std::string source) : source_(std::move(source)) {}

  Config load(std::string_view text) {
    YAML::Node root = parse(text);
    where_[""] = loc_of(root.Mark());
    walk_map(root, "");
    check_required();
    apply_defaults();
    check_cross_fields();
    return cfg_;
  }

  // Only the keys written: names, types, ranges; nothing required, no cross-key checks.
  void check_keys(std::string_view text) {
    YAML::Node root = parse(text);
    where_[""] = loc_of(root.Mark());
    walk_map(root, "");
  }

 private:
  [[noreturn]] void fail(Loc loc, std::string key, std::string message, std::string hint = "",
                         std::string value = "", std::string allowed = "") const {
    ConfigError::Details d;
    d.file = source_;
    d.line = loc.line;
    d.column = loc.column;
    d.key = std::move(key);
    d.value = std::move(value);
    d.allowed = std::move(allowed);
    d.message = std::move(message);
    d.hint = std::move(hint);
    throw ConfigError(std::move(d));
  }

  YAML::Node parse(std::string_view text) {
    // Not YAML::LoadAll: in yaml-cpp 0.7 it loops forever, allocating, on input such as a
    // stray ',' (jbeder/yaml-cpp#1040, fixed upstream after 0.7). Load reads one document;
    // a bounded second pass looks for another.
    YAML::Node root;
    std::optional<YAML::Mark> second_document;
    try {
      const std::string owned(text);
      root = YAML::Load(owned);
      second_document = find_second_document(owned);
    } catch (const YAML::Exception& e) {
      fail(loc_of(e.mark), "", "YAML syntax error: " + e.msg,
           "check indentation (spaces, not tabs), colons and brackets at or just before this "
           "position");
    }
    if (root.IsNull()) {
      if (root.Mark().is_null()) {
        fail({1, 1}, "", "the config is empty",
             "a config needs at least name, clock_mhz, core and memory; start from one of "
             "configs/presets/*.yaml");
      }
      fail(loc_of(root.Mark()), "", "the top level must be a mapping of keys, got nothing",
           "a config starts with 'name: my-chip'; look for a stray character at this position");
    }
    if (second_document) {
      fail(loc_of(*second_document), "", "more than one YAML document ('---') in one config",
           "put each config in its own file");
    }
    if (!root.IsMap()) {
      fail(loc_of(root.Mark()), "",
           fmt::format("the top level must be a mapping of keys, got {}", node_kind(root)),
           "start with 'name: my-chip' and the sections clock_mhz, core, memory, ...");
    }
    return root;
  }

  // Position of a second document with content, if any. Parses at most two documents.
  static std::optional<YAML::Mark> find_second_document(const std::string& text) {
    struct Probe : YAML::EventHandler {
      std::optional<YAML::Mark> content;  // first non-null node
      void seen(const YAML::Mark& m) {
        if (!content) content = m;
      }
      void OnDocumentStart(const YAML::Mark&) override {}
      void OnDocumentEnd() override {}
      void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
      void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { seen(m); }
      void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                    const std::string&) override {
        seen(m);
      }
      void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                           YAML::EmitterStyle::value) override {
        seen(m);
      }
      void OnSequenceEnd() override {}
      void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                      YAML::EmitterStyle::value) override {
        seen(m);
      }
      void OnMapEnd() override {}
    };
    std::istringstream in(text);
    YAML::Parser parser(in);
    Probe first;
    Probe second;
    if (!parser.HandleNextDocument(first) || !parser.HandleNextDocument(second)) return {};
    return second.content;
  }

  void walk_map(const YAML::Node& map, const std::string& prefix) {
    std::unordered_map<std::string, Loc> seen;
    for (const auto& entry : map) {  // yaml-cpp yields pairs by value: keep copies
      const YAML::Node key = entry.first;
      const YAML::Node value = entry.second;
      const Loc at = loc_of(key.Mark());
      if (!key.IsScalar()) {
        fail(at, prefix, fmt::format("a key must be a plain name, got {}", node_kind(key)),
             "write keys as 'name: value'");
      }
      const std::string name = key.Scalar();
      const std::string path = prefix.empty() ? name : prefix + "." + name;
      if (auto [first, fresh] = seen.emplace(name, at); !fresh) {
        fail(at, path, fmt::format("duplicate key (first given at line {})", first->second.line),
             "remove one of the two");
      }
      where_[path] = at;
      const SchemaIndex& index = schema_index();
      if (auto leaf = index.leaves.find(path); leaf != index.leaves.end()) {
        parse_leaf(*leaf->second, value, at, path);
        given_.insert(path);
      } else if (index.is_section(path)) {
        if (!value.IsMap()) {
          fail(at, path, fmt::format("expected a mapping, got {}", node_kind(value)),
               fmt::format("'{}' is a section; its keys are: {}", path,
                           join(index.children.at(path))));
        }
        walk_map(value, path);
      } else {
        unknown_key(at, prefix, name, path);
      }
    }
  }

  [[noreturn]] void unknown_key(Loc at, const std::string& prefix, const std::string& name,
                                const std::string& path) const {
    const SchemaIndex& index = schema_index();
    const std::vector<std::string>& here = index.children.at(prefix);
    std::string guess = closest(name, here);
    if (!guess.empty()) guess = prefix.empty() ? guess : prefix + "." + guess;
    std::string message = "unknown key";
    if (!guess.empty()) {
      message += fmt::format("; did you mean '{}'?", guess);
    } else {
      // Maybe the key exists, but in another section.
      std::vector<std::string> elsewhere;
      for (const Field& f : detail::fields()) {
        if (last_of(f.info.path) == name) elsewhere.push_back(fmt::format("'{}'", f.info.path));
      }
      if (!elsewhere.empty()) message += fmt::format("; it exists as {}", join(elsewhere));
    }
    fail(at, path, message,
         fmt::format("keys allowed {}: {}",
                     prefix.empty() ? "at the top level" : "in '" + prefix + "'", join(here)));
  }

  // Value-level errors point at the value when it has a position, else at the key.
  static Loc value_loc(const YAML::Node& value, Loc key_at) {
    const Loc v = loc_of(value.Mark());
    return v.line > 0 && !value.IsNull() ? v : key_at;
  }

  [[noreturn]] void out_of_range(const KeyInfo& k, const std::string& path, Loc at,
                                 const std::string& text) const {
    const std::string range = detail::range_text(k);
    fail(at, path, fmt::format("value {} out of range {}", text, range),
         fmt::format("use a value in {}. {}", range, about(k)), text, range);
  }

  // Scalar text of a value that must be a scalar.
  std::string scalar(const KeyInfo& k, const std::string& path, const YAML::Node& v, Loc at) const {
    if (!v.IsScalar()) {
      fail(at, path, fmt::format("expected {}, got {}", expected_noun(k.type), node_kind(v)),
           about(k));
    }
    return v.Scalar();
  }

  double number(const KeyInfo& k, const std::string& path, const std::string& text, Loc at,
                KeyType type) const {
    double x = 0;
    if (std::string err = detail::parse_quantity(text, type, x); !err.empty()) {
      std::string hint = type == KeyType::kNumber
                             ? fmt::format("write a plain number in {}", k.unit)
                             : fmt::format(
                                   "write a number in {} or a number with one of the "
                                   "units {}",
                                   k.unit, detail::unit_list(type));
      fail(at, path, err, hint, text, detail::range_text(k));
    }
    if (x < k.min || x > k.max) out_of_range(k, path, at, text);
    return x;
  }

  uint32_t integer(const KeyInfo& k, const std::string& path, const std::string& text,
                   Loc at) const {
    int64_t v = 0;
    if (std::string err = detail::parse_integer(text, v); !err.empty()) {
      fail(at, path, err, fmt::format("write a whole number in {}", detail::range_text(k)), text,
           detail::range_text(k));
    }
    if (static_cast<double>(v) < k.min || static_cast<double>(v) > k.max) {
      out_of_range(k, path, at, text);
    }
    return static_cast<uint32_t>(v);
  }

  size_t enum_index(const KeyInfo& k, const std::string& path, const std::string& text,
                    Loc at) const {
    for (size_t i = 0; i < k.allowed.size(); ++i) {
      if (k.allowed[i] == text) return i;
    }
    std::vector<std::string> names(k.allowed.begin(), k.allowed.end());
    const std::string guess = closest(text, names);
    fail(at, path,
         fmt::format("'{}' is not one of: {}{}", text, join(names),
                     guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess)),
         fmt::format("use {}. {}", detail::range_text(k), about(k)), text, detail::range_text(k));
  }

  void check_items(const KeyInfo& k, const std::string& path, const YAML::Node& v, Loc at) const {
    if (!v.IsSequence()) {
      fail(at, path, fmt::format("expected {}, got {}", expected_noun(k.type), node_kind(v)),
           about(k));
    }
    if (v.size() < k.min_items || v.size() > k.max_items) {
      fail(at, path,
           fmt::format("{} items given, {} to {} allowed", v.size(), k.min_items, k.max_items),
           about(k), "", detail::range_text(k));
    }
  }

  void parse_leaf(const Field& f, const YAML::Node& v, Loc key_at, const std::string& path) {
    const KeyInfo& k = f.info;
    if (v.IsNull()) {
      fail(key_at, path, "no value given",
           k.required ? fmt::format("this key is required. {}", about(k))
                      : fmt::format("give a value ({}) or remove the key to get the default",
                                    detail::range_text(k)));
    }
    const Loc at = value_loc(v, key_at);
    const Slot slot = f.slot(cfg_);
    switch (k.type) {
      case KeyType::kString: {
        std::string s = scalar(k, path, v, at);
        if (s.size() < k.min || s.size() > k.max) {
          out_of_range(k, path, at, fmt::format("of {} characters", s.size()));
        }
        *std::get<std::string*>(slot) = std::move(s);
        break;
      }
      case KeyType::kInt:
        *std::get<uint32_t*>(slot) = integer(k, path, scalar(k, path, v, at), at);
        break;
      case KeyType::kBool: {
        const std::string s = scalar(k, path, v, at);
        if (s == "true" || s == "True" || s == "TRUE") {
          *std::get<bool*>(slot) = true;
        } else if (s == "false" || s == "False" || s == "FALSE") {
          *std::get<bool*>(slot) = false;
        } else {
          fail(at, path, fmt::format("expected true or false, got '{}'", s), about(k), s,
               "true or false");
        }
        break;
      }
      case KeyType::kBytes:
        *std::get<uint64_t*>(slot) =
            static_cast<uint64_t>(number(k, path, scalar(k, path, v, at), at, k.type));
        break;
      case KeyType::kNumber:
      case KeyType::kBandwidth:
      case KeyType::kTime:
      case KeyType::kFrequency:
      case KeyType::kPower:
      case KeyType::kEnergy:
        *std::get<double*>(slot) = number(k, path, scalar(k, path, v, at), at, k.type);
        break;
      case KeyType::kEnum: {
        const size_t i = enum_index(k, path, scalar(k, path, v, at), at);
        if (auto* kind = std::get_if<MemoryKind*>(&slot)) **kind = static_cast<MemoryKind>(i);
        if (auto* policy = std::get_if<PagePolicy*>(&slot)) **policy = static_cast<PagePolicy>(i);
        break;
      }
      case KeyType::kEnumList: {
        check_items(k, path, v, at);
        std::vector<DType> list;
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string item_path = fmt::format("{}[{}]", path, i);
          const Loc item_at = value_loc(v[i], at);
          const auto d = static_cast<DType>(
              enum_index(k, item_path, scalar(k, item_path, v[i], item_at), item_at));
          if (std::find(list.begin(), list.end(), d) != list.end()) {
            fail(item_at, item_path, fmt::format("'{}' is listed twice", to_string(d)),
                 "list each type once");
          }
          list.push_back(d);
        }
        *std::get<std::vector<DType>*>(slot) = std::move(list);
        break;
      }
      case KeyType::kIntList: {
        check_items(k, path, v, at);
        std::vector<uint32_t> list;
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string item_path = fmt::format("{}[{}]", path, i);
          const Loc item_at = value_loc(v[i], at);
          list.push_back(integer(k, item_path, scalar(k, item_path, v[i], item_at), item_at));
        }
        *std::get<std::vector<uint32_t>*>(slot) = std::move(list);
        break;
      }
      case KeyType::kSramTable:
        *std::get<std::vector<SramPoint>*>(slot) = sram_table(k, path, v, at);
        break;
    }
  }

  std::vector<SramPoint> sram_table(const KeyInfo& k, const std::string& path, const YAML::Node& v,
                                    Loc at) const {
    check_items(k, path, v, at);
    std::vector<SramPoint> table;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item_path = fmt::format("{}[{}]", path, i);
      const YAML::Node& item = v[i];
      const Loc item_at = value_loc(item, at);
      if (!item.IsMap()) {
        fail(item_at, item_path,
             fmt::format("expected a mapping {{bytes: SIZE, pj: ENERGY}}, got {}", node_kind(item)),
             "write items like '- {bytes: 32KiB, pj: 8.5}'");
      }
      SramPoint point;
      std::set<std::string> keys;
      for (const auto& entry : item) {
        const YAML::Node key = entry.first;
        const YAML::Node value = entry.second;
        const std::string name = key.IsScalar() ? key.Scalar() : "";
        const std::string key_path = item_path + "." + name;
        const Loc key_at = loc_of(key.Mark());
        if (name != "bytes" && name != "pj") {
          fail(key_at, key_path, "unknown key; an item has exactly the keys 'bytes' and 'pj'",
               "write items like '- {bytes: 32KiB, pj: 8.5}'");
        }
        if (!keys.insert(name).second)
          fail(key_at, key_path, "duplicate key", "remove one of the two");
        const Loc val_at = value_loc(value, key_at);
        if (value.IsNull()) fail(key_at, key_path, "no value given", "give a value");
        if (!value.IsScalar()) {
          fail(val_at, key_path, fmt::format("expected a scalar, got {}", node_kind(value)));
        }
        const std::string text = value.Scalar();
        if (name == "bytes") {
          double bytes = 0;
          if (std::string err = detail::parse_quantity(text, KeyType::kBytes, bytes);
              !err.empty()) {
            fail(val_at, key_path, err,
                 fmt::format("write a size such as 32KiB ({})", detail::unit_list(KeyType::kBytes)),
                 text);
          }
          if (bytes < 1)
            fail(val_at, key_path, fmt::format("value {} must be at least 1 byte", text), "", text,
                 ">= 1B");
          point.bytes = static_cast<uint64_t>(bytes);
        } else {
          point.pj = number(k, key_path, text, val_at, KeyType::kEnergy);
        }
      }
      if (keys.size() != 2) {
        fail(item_at, item_path,
             fmt::format("missing key '{}'", keys.count("bytes") ? "pj" : "bytes"),
             "write items like '- {bytes: 32KiB, pj: 8.5}'");
      }
      if (!table.empty() && point.bytes <= table.back().bytes) {
        fail(item_at, item_path + ".bytes",
             fmt::format("macro sizes must ascend: {} after {}", detail::format_bytes(point.bytes),
                         detail::format_bytes(table.back().bytes)),
             "list the points from the smallest macro to the largest, each size once");
      }
      table.push_back(point);
    }
    return table;
  }

  // Location of a key, or of its nearest written ancestor section.
  Loc loc_for(const std::string& path) const {
    for (std::string p = path;; p = parent_of(p)) {
      if (auto it = where_.find(p); it != where_.end()) return it->second;
      if (p.empty()) return {1, 1};
    }
  }

  void check_required() const {
    for (const Field& f : detail::fields()) {
      const std::string path(f.info.path);
      if (f.info.required && !given_.count(path)) {
        const std::string parent = parent_of(path);
        fail(loc_for(parent), path, "missing required key",
             fmt::format("add '{}: ...'{}. {}", last_of(path),
                         parent.empty() ? "" : fmt::format(" under '{}'", parent), about(f.info)),
             "", detail::range_text(f.info));
      }
    }
  }

  void apply_defaults() {
    for (const Field& f : detail::fields()) {
      const std::string path(f.info.path);
      if (given_.count(path) || f.derive != nullptr) continue;
      // Static defaults go through the same parser as user values.
      try {
        parse_leaf(f, YAML::Load(std::string(f.info.default_text)), {}, path);
      } catch (const std::exception& e) {
        throw vtpu::InternalError("bad schema default for " + path + ": " + e.what());
      }
    }
    // Derived defaults may read keys earlier in the table (including derived ones).
    for (const Field& f : detail::fields()) {
      if (f.derive != nullptr && !given_.count(std::string(f.info.path))) f.derive(cfg_);
    }
  }

  // Cross-field errors are reported at the key that the hint asks to change.
  [[noreturn]] void fail_key(const std::string& path, std::string message, std::string hint,
                             std::string value = "", std::string allowed = "") const {
    if (!given_.count(path)) message += " (default value)";
    fail(loc_for(path), path, std::move(message), std::move(hint), std::move(value),
         std::move(allowed));
  }

  void check_cross_fields() const {
    const Config& c = cfg_;
    for (char ch : c.name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') {
        fail_key("name", fmt::format("'{}' contains '{}'", c.name, ch),
                 "use only letters, digits, '.', '_' and '-' (it names output files)", c.name,
                 "[A-Za-z0-9._-]+");
      }
    }

    // Accumulators: whole banks, each holding a full tile of outputs for double buffering.
    const auto& acc = c.core.accumulators;
    if (acc.rows % acc.banks != 0) {
      fail_key("core.accumulators.rows",
               fmt::format("{} rows do not split evenly into {} banks", acc.rows, acc.banks),
               "make core.accumulators.rows a multiple of core.accumulators.banks",
               std::to_string(acc.rows), fmt::format("multiple of {}", acc.banks));
    }
    if (acc.rows / acc.banks < c.core.mxu.rows) {
      const uint64_t need = uint64_t{acc.banks} * c.core.mxu.rows;
      fail_key("core.accumulators.rows",
               fmt::format("accumulators too small: {} rows in {} banks leave {} rows per bank, "
                           "fewer than core.mxu.rows = {}",
                           acc.rows, acc.banks, acc.rows / acc.banks, c.core.mxu.rows),
               fmt::format("each bank must hold one tile of outputs; set "
                           "core.accumulators.rows to at least banks x core.mxu.rows = {}",
                           need),
               std::to_string(acc.rows), fmt::format(">= {}", need));
    }

    const auto& ub = c.core.unified_buffer;
    const uint64_t ub_stride = uint64_t{ub.banks} * ub.row_bytes;
    if (ub.bytes % ub_stride != 0) {
      fail_key("core.unified_buffer.bytes",
               fmt::format("{} is not a multiple of banks x row_bytes = {} x {} = {}",
                           detail::format_bytes(ub.bytes), ub.banks,
                           detail::format_bytes(ub.row_bytes), detail::format_bytes(ub_stride)),
               "every bank must hold whole rows; round the size to a multiple of banks x "
               "row_bytes",
               detail::format_bytes(ub.bytes),
               fmt::format("multiple of {}", detail::format_bytes(ub_stride)));
    }
    if ((ub.alignment_bytes & (ub.alignment_bytes - 1)) != 0 ||
        ub.row_bytes % ub.alignment_bytes != 0) {
      fail_key(
          "core.unified_buffer.alignment_bytes",
          fmt::format("{} is not a power of two dividing row_bytes = {}",
                      detail::format_bytes(ub.alignment_bytes), detail::format_bytes(ub.row_bytes)),
          "use a power of two that divides core.unified_buffer.row_bytes",
          detail::format_bytes(ub.alignment_bytes), "power of two dividing row_bytes");
    }

    const uint32_t lanes = c.core.vector.lanes;
    const uint32_t cols = c.core.mxu.cols;
    if (cols % lanes != 0 && lanes % cols != 0) {
      fail_key("core.vector.lanes",
               fmt::format("{} lanes neither divide nor are a multiple of core.mxu.cols = {}",
                           lanes, cols),
               "accumulator rows are read lane-wise; pick a divisor or a multiple of "
               "core.mxu.cols",
               std::to_string(lanes), "divisor or multiple of core.mxu.cols");
    }

    if (c.core.scalar.imem_prefetch && c.core.scalar.imem_bundles < 2) {
      fail_key("core.scalar.imem_bundles",
               fmt::format("{} bundle cannot hold the two windows core.scalar.imem_prefetch needs",
                           c.core.scalar.imem_bundles),
               "give the instruction memory at least 2 bundles or set core.scalar.imem_prefetch: false",
               std::to_string(c.core.scalar.imem_bundles), ">= 2");
    }

    if (c.core.dma.queue_depth < c.core.dma.max_in_flight) {
      fail_key("core.dma.queue_depth",
               fmt::format("queue depth {} is smaller than core.dma.max_in_flight = {}",
                           c.core.dma.queue_depth, c.core.dma.max_in_flight),
               "the queue holds every in-flight descriptor; raise queue_depth",
               std::to_string(c.core.dma.queue_depth),
               fmt::format(">= {}", c.core.dma.max_in_flight));
    }

    // Off-chip memory geometry must tile the capacity exactly (address mapping).
    const auto& m = c.memory;
    if (m.row_bytes % m.burst_bytes != 0) {
      fail_key("memory.row_bytes",
               fmt::format("{} is not a multiple of memory.burst_bytes = {}",
                           detail::format_bytes(m.row_bytes), detail::format_bytes(m.burst_bytes)),
               "a row holds whole bursts", detail::format_bytes(m.row_bytes),
               fmt::format("multiple of {}", detail::format_bytes(m.burst_bytes)));
    }
    const uint64_t mem_stride = uint64_t{m.channels} * m.banks_per_channel * m.row_bytes;
    if (m.bytes % mem_stride != 0) {
      fail_key("memory.bytes",
               fmt::format("{} is not a multiple of channels x banks_per_channel x row_bytes = "
                           "{} x {} x {} = {}",
                           detail::format_bytes(m.bytes), m.channels, m.banks_per_channel,
                           detail::format_bytes(m.row_bytes), detail::format_bytes(mem_stride)),
               "every bank of every channel holds whole rows; adjust memory.bytes or the "
               "geometry",
               detail::format_bytes(m.bytes),
               fmt::format("multiple of {}", detail::format_bytes(mem_stride)));
    }
    if (m.interleave_bytes % m.burst_bytes != 0 || m.interleave_bytes > m.row_bytes) {
      fail_key("memory.interleave_bytes",
               fmt::format("{} is not a multiple of burst_bytes = {} within row_bytes = {}",
                           detail::format_bytes(m.interleave_bytes),
                           detail::format_bytes(m.burst_bytes), detail::format_bytes(m.row_bytes)),
               "use a multiple of memory.burst_bytes no larger than memory.row_bytes",
               detail::format_bytes(m.interleave_bytes),
               fmt::format("multiple of {} up to {}", detail::format_bytes(m.burst_bytes),
                           detail::format_bytes(m.row_bytes)));
    }

    // Torus: the shape must cover exactly the chips, and each chip needs enough links.
    uint64_t product = 1;
    for (uint32_t d : c.ici.shape) product *= d;
    const uint32_t links_needed = config::links_needed(c.ici.shape);
    if (product != c.system.chips) {
      fail_key("ici.shape",
               fmt::format("torus shape {} has {} chips but system.chips is {}",
                           shape_text(c.ici.shape), product, c.system.chips),
               "make the product of ici.shape equal system.chips", shape_text(c.ici.shape),
               fmt::format("product = {}", c.system.chips));
    }
    if (c.ici.links < links_needed) {
      fail_key("ici.links",
               fmt::format("{} links per chip are too few for torus shape {}, which needs {}",
                           c.ici.links, shape_text(c.ici.shape), links_needed),
               "each dimension longer than 2 needs 2 links per chip, a dimension of 2 needs 1",
               std::to_string(c.ici.links), fmt::format(">= {}", links_needed));
    }
    check_twist(c.ici);
    // The chips run ahead of each other by up to one hop's delay (docs/microarch.md, "Time
    // across chips"), which must therefore be at least a cycle.
    if (c.system.chips > 1 && (c.ici.link_latency_ns + c.ici.router_delay_ns) * c.clock_mhz / 1000.0 < 0.5) {
      fail_key("ici.link_latency_ns",
               fmt::format("a hop takes {} ns (link latency + router delay), less than one {} MHz cycle",
                           c.ici.link_latency_ns + c.ici.router_delay_ns, c.clock_mhz),
               "a multi-chip system needs link_latency_ns + router_delay_ns of at least one clock cycle",
               detail::format_number(c.ici.link_latency_ns), ">= 1 cycle with router_delay_ns");
    }
  }

  void check_twist(const IciConfig& ici) const {
    if (ici.twist.empty()) return;
    if (ici.twist.size() != ici.shape.size()) {
      fail_key("ici.twist",
               fmt::format("{} entries for a {}-dimensional torus {}", ici.twist.size(), ici.shape.size(),
                           shape_text(ici.shape)),
               "give one entry per dimension of ici.shape, or leave ici.twist empty", shape_text(ici.twist),
               fmt::format("{} entries", ici.shape.size()));
    }
    if (!ici.wraparound) {
      fail_key("ici.twist", "a twist needs the wraparound links of a torus (ici.wraparound: false)",
               "set ici.wraparound: true or remove ici.twist", shape_text(ici.twist), "[] for a mesh");
    }
    const uint32_t last = ici.shape.back();
    for (size_t d = 0; d < ici.twist.size(); ++d) {
      const bool ok = d + 1 == ici.twist.size() ? ici.twist[d] == 0 : ici.twist[d] < last;
      if (!ok) {
        fail_key("ici.twist",
                 fmt::format("entry {} is {}", d, ici.twist[d]),
                 "the last entry must be 0 and the others smaller than the last dimension of ici.shape",
                 shape_text(ici.twist),
                 d + 1 == ici.twist.size() ? std::string("0") : fmt::format("0 .. {}", last - 1));
      }
    }
  }

  std::string source_;
  Config cfg_;
  std::unordered_map<std::string, Loc> where_;  // written keys and sections -> position
  std::set<std::string> given_;                 // leaf keys written in the file
};

ConfigError file_error(const std::filesystem::path& path, std::string message, std::string hint) {
  ConfigError::Details d;
  d.file = path.string();
  d.message = std::move(message);
  d.hint = std::move(hint);
  return ConfigError(std::move(d));
}

std::string preset_hint() {
  return "available presets: " + join(preset_names()) + "; or give a path to a .yaml file";
}

}  // namespace

ConfigError::ConfigError(Details d) : vtpu::UserError(format_error(d)), d_(std::move(d)) {}

Config load_string(std::string_view yaml, std::string_view source_name) {
  return Loader(std::string(source_name)).load(yaml);
}

void check_keys(std::string_view yaml, std::string_view source_name) {
  Loader(std::string(source_name)).check_keys(yaml);
}

std::string parse_quantity(std::string_view text, KeyType type, double& out) {
  return detail::parse_quantity(text, type, out);
}

Config load_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw file_error(path, "is a directory, not a config file", "give the path of a .yaml file");
  }
  if (auto st = std::filesystem::status(path, ec); !ec && std::filesystem::exists(st) &&
      !std::filesystem::is_regular_file(st) && !std::filesystem::is_fifo(st)) {
    throw file_error(path, "is not a regular file (a device?)", "give the path of a .yaml file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw file_error(path, "cannot open config file (does it exist and is it readable?)",
                     "check the path; " + preset_hint());
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_string(text.str(), path.string());
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (size_t i = 0; i < detail::kEmbeddedPresetCount; ++i) {
    names.emplace_back(detail::kEmbeddedPresets[i].name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Config load_preset(std::string_view name) {
  return load_string(preset_yaml(name), fmt::format("configs/presets/{}.yaml", name));
}

std::string preset_yaml(std::string_view name) {
  for (size_t i = 0; i < detail::kEmbeddedPresetCount; ++i) {
    const detail::EmbeddedPreset& p = detail::kEmbeddedPresets[i];
    if (p.name == name) return std::string(p.yaml);
  }
  const std::string guess = closest(name, preset_names());
  ConfigError::Details d;
  d.value = std::string(name);
  d.allowed = join(preset_names());
  d.message = fmt::format("unknown preset '{}'{}", name,
                          guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess));
  d.hint = preset_hint();
  throw ConfigError(std::move(d));
}

Config resolve(std::string_view preset_name_or_path) {
  const std::string arg(preset_name_or_path);
  const std::filesystem::path path(arg);
  const auto ext = path.extension();
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || ext == ".yaml" || ext == ".yml") {
    return load_file(path);
  }
  return load_preset(arg);
}

}  // namespace vtpu::config
