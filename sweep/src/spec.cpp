// Sweep file -> SweepSpec. Every key is checked where it is written; config keys and values
// are checked by the config library itself (check_keys), so the rules are written once.
#include "vtpu/sweep/spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "vtpu/config/schema.h"
#include "vtpu/models/zoo.h"
#include "vtpu/support/spelling.h"
#include "vtpu/sweep/results.h"

namespace vtpu::sweep {
namespace fs = std::filesystem;

namespace {

std::string format_error(const std::string& file, int line, int column, const std::string& key, const std::string& what,
                         const std::string& hint) {
  std::string s = file;
  if (line > 0) s += fmt::format(":{}:{}", line, column);
  s += ": error: ";
  if (!key.empty()) s += fmt::format("key '{}': ", key);
  s += what;
  if (!hint.empty()) s += "\n  hint: " + hint;
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::vector<std::string> split(const std::string& path, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string p; std::getline(in, p, sep);) parts.push_back(p);
  return parts;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// YAML text of a scalar or sequence value, as a config file would hold it.
std::string value_text(const YAML::Node& v) {
  if (v.IsScalar()) return v.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << v;
  return out.c_str();
}

class Parser {
 public:
  Parser(std::string source, fs::path dir) : src_(std::move(source)), dir_(std::move(dir)) {}

  SweepSpec parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw SweepError(src_, e.mark.line + 1, e.mark.column + 1, "", e.msg, "the sweep file is YAML; check the syntax there");
    }
    if (!root.IsMap())
      throw SweepError(src_, 1, 1, "", root.IsNull() ? "the file is empty" : "the top level must be a mapping",
                       "start from examples/sweep_resnet50_bert.yaml (docs/sweeps.md)");
    SweepSpec s;
    s.text_hash = fnv1a(text);
    s.name = fs::path(src_).stem().string();
    auto top = fields(root, "", {"name", "base", "set", "models", "dtypes", "batches", "axes", "constraints", "search",
                                 "metrics", "seed", "simulation"});
    if (top.count("name")) s.name = scalar(top["name"], "name");
    if (!top.count("base")) fail(root, "base", "missing", "name the config every point starts from: a preset (vtpu config list) or a YAML file");
    base(s, top["base"], top.count("set") ? &top["set"] : nullptr);
    std::vector<int64_t> batches{0};
    if (top.count("batches")) batches = ints(top["batches"], "batches", 0, 1 << 20);
    if (!top.count("models")) fail(root, "models", "missing", "list zoo names (vtpu models) or .onnx files");
    models(s, top["models"], batches);
    if (top.count("dtypes")) dtypes(s, top["dtypes"]);
    if (top.count("search")) search(s, top["search"]);  // before the axes: it decides whether they may share keys
    if (top.count("axes")) axes(s, top["axes"]);
    if (top.count("constraints")) constraints(s, top["constraints"]);
    s.metrics = metric_names();
    if (top.count("metrics")) s.metrics = metric_list(top["metrics"], "metrics");
    if (top.count("seed")) s.seed = uint64_t(ints(top["seed"], "seed", 0, 1e15, true)[0]);
    if (top.count("simulation")) {
      std::string m = scalar(top["simulation"], "simulation");
      if (m != "timing" && m != "full")
        fail(top["simulation"], "simulation", fmt::format("'{}' is not timing or full", m),
             "timing (the default) skips the arithmetic and gives the same cycles and energy; full also computes the values");
      s.timing_only = m == "timing";
    }
    check_grid(s, root);
    return s;
  }

 private:
  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what,
                         const std::string& hint = "") const {
    YAML::Mark m = at.Mark();
    throw SweepError(src_, m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1, key, what, hint);
  }

  // A mapping's entries by name; unknown and duplicate keys are errors.
  // `config_keys`: the keys are config keys (too many to list in a hint).
  std::map<std::string, YAML::Node> fields(const YAML::Node& map, const std::string& prefix,
                                           const std::vector<std::string>& allowed, bool config_keys = false) const {
    std::string keys_hint = config_keys ? "config keys as docs/config.md lists them, dotted: core.mxu.rows, ..."
                                        : fmt::format("keys allowed here: {}", join(allowed));
    if (!map.IsMap()) fail(map, prefix, "expected a mapping", keys_hint);
    std::map<std::string, YAML::Node> out;
    for (const auto& e : map) {
      YAML::Node k = e.first, v = e.second;
      std::string name = k.IsScalar() ? k.Scalar() : "?";
      std::string path = prefix.empty() ? name : prefix + "." + name;
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string guess = closest(name, allowed);
        fail(k, path, (config_keys ? "not a config key" : "unknown key") + (guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess)),
             config_keys ? keys_hint
                         : fmt::format("keys allowed {}: {}", prefix.empty() ? "at the top level" : "in '" + prefix + "'", join(allowed)));
      }
      if (out.count(name)) fail(k, path, "duplicate key", "remove one of the two");
      out[name] = v;
    }
    return out;
  }

  std::string scalar(const YAML::Node& v, const std::string& key) const {
    if (!v.IsScalar()) fail(v, key, "expected a single value");
    return v.Scalar();
  }

  std::vector<YAML::Node> list(const YAML::Node& v, const std::string& key, bool allow_scalar = false) const {
    std::vector<YAML::Node> out;
    if (allow_scalar && v.IsScalar()) return {v};
    if (!v.IsSequence() || v.size() == 0) fail(v, key, "expected a non-empty list", "write [a, b, ...] or one '- item' per line");
    for (const auto& x : v) out.push_back(x);
    return out;
  }

  std::vector<int64_t> ints(const YAML::Node& v, const std::string& key, double lo, double hi, bool single = false) const {
    std::vector<int64_t> out;
    for (const YAML::Node& x : list(v, key, true)) {
      int64_t n = 0;
      std::string t = x.IsScalar() ? x.Scalar() : "";
      size_t used = 0;
      try {
        n = std::stoll(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (t.empty() || used != t.size()) fail(x, key, fmt::format("'{}' is not a whole number", t));
      if (double(n) < lo || double(n) > hi) fail(x, key, fmt::format("{} is out of range [{}, {}]", n, lo, hi));
      out.push_back(n);
    }
    if (single && (out.size() != 1 || v.IsSequence())) fail(v, key, "expected one whole number");
    return out;
  }

  double quantity(const YAML::Node& v, const std::string& key, config::KeyType type) const {
    double x = 0;
    if (std::string err = config::parse_quantity(scalar(v, key), type, x); !err.empty()) fail(v, key, err);
    if (!(x > 0)) fail(v, key, "must be positive");
    return x;
  }

  // config::check_keys on `sets`, reporting its error at `at` in the sweep file.
  void check_config_keys(const std::vector<std::pair<std::string, std::string>>& sets, const YAML::Node& at,
                         const std::string& key) const {
    try {
      config::check_keys(with_sets("{}", sets), "axis value");
    } catch (const config::ConfigError& e) {
      fail(at, key, fmt::format("config key '{}': {}", e.key(), e.details().message), e.hint());
    } catch (const YAML::Exception& e) {
      fail(at, key, fmt::format("not a config value: {}", e.msg));
    }
  }

  std::string schema_key(const YAML::Node& v, const std::string& key) const {
    std::string k = scalar(v, key);
    std::vector<std::string> paths;
    for (const auto& info : config::schema_keys()) paths.emplace_back(info.path);
    if (std::find(paths.begin(), paths.end(), k) != paths.end()) return k;
    std::string guess = closest(k, paths);
    fail(v, key, fmt::format("'{}' is not a config key{}", k, guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess)),
         "axes take any key of docs/config.md's key reference, dotted: core.mxu.rows, memory.bandwidth_gbytes_per_s, ...");
  }

  void base(SweepSpec& s, const YAML::Node& b, const YAML::Node* set) {
    s.base = scalar(b, "base");
    fs::path p = fs::path(s.base).is_absolute() ? fs::path(s.base) : dir_ / s.base;
    std::string ext = p.extension().string();
    try {
      if (fs::exists(p) || ext == ".yaml" || ext == ".yml") {
        std::ifstream in(p, std::ios::binary);
        if (!in) fail(b, "base", fmt::format("cannot read config file {}", p.string()), "give a preset name or a path relative to the sweep file");
        std::ostringstream t;
        t << in.rdbuf();
        s.base_yaml = t.str();
        config::load_string(s.base_yaml, p.string());
      } else {
        s.base_yaml = config::preset_yaml(s.base);
      }
    } catch (const config::ConfigError& e) {
      fail(b, "base", e.details().message + (e.details().file.empty() ? "" : " (" + e.details().file + ")"), e.hint());
    }
    std::vector<std::pair<std::string, std::string>> sets;
    if (set) {
      for (const auto& [k, v] : fields(*set, "set", config_paths(), true)) {
        sets.push_back({k, value_text(v)});
        check_config_keys({sets.back()}, v, "set." + k);
      }
    }
    try {
      s.base_yaml = with_sets(s.base_yaml, sets);
      s.base_config = config::load_string(s.base_yaml, "base");
    } catch (const config::ConfigError& e) {
      fail(set ? *set : b, set ? "set" : "base", e.details().message, e.hint());
    }
  }

  static std::vector<std::string> config_paths() {
    std::vector<std::string> paths;
    for (const auto& info : config::schema_keys()) paths.emplace_back(info.path);
    return paths;
  }

  void models(SweepSpec& s, const YAML::Node& v, const std::vector<int64_t>& batches) {
    std::set<std::string> seen;
    for (const YAML::Node& item : list(v, "models")) {
      ModelSpec m;
      m.batches = batches;
      YAML::Node name_node = item;
      if (item.IsMap()) {
        auto f = fields(item, "models[]", {"name", "batches", "calibrate"});
        if (!f.count("name")) fail(item, "models[].name", "missing", "a zoo name (vtpu models) or an .onnx file");
        name_node = f["name"];
        if (f.count("batches")) m.batches = ints(f["batches"], "models[].batches", 0, 1 << 20);
        if (f.count("calibrate")) {
          if (!f["calibrate"].IsMap()) fail(f["calibrate"], "models[].calibrate", "expected a mapping input name -> .npy or image files");
          for (const auto& e : f["calibrate"]) {
            std::string files = scalar(e.second, "models[].calibrate");
            std::string resolved;
            for (const std::string& one : split(files, ',')) {
              fs::path p = fs::path(one).is_absolute() ? fs::path(one) : dir_ / one;
              if (!fs::exists(p)) fail(e.second, "models[].calibrate", fmt::format("{} does not exist", p.string()), "paths are relative to the sweep file");
              resolved += (resolved.empty() ? "" : ",") + p.string();
            }
            m.calibrate[e.first.Scalar()] = resolved;
          }
        }
      }
      m.name = scalar(name_node, "models[]");
      if (m.name.size() > 5 && m.name.substr(m.name.size() - 5) == ".onnx") {
        m.path = fs::path(m.name).is_absolute() ? fs::path(m.name) : dir_ / m.name;
        if (!fs::exists(m.path)) fail(name_node, "models[]", fmt::format("{} does not exist", m.path.string()), "paths are relative to the sweep file");
      } else if (models::find(m.name)) {
        m.zoo = true;
      } else {
        std::vector<std::string> names;
        for (const auto& e : models::zoo()) names.push_back(e.name);
        std::string guess = closest(m.name, names);
        fail(name_node, "models[]", fmt::format("'{}' is not a zoo model or an .onnx file{}", m.name,
                                                guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess)),
             "the zoo: " + join(names));
      }
      if (!seen.insert(m.name).second) fail(name_node, "models[]", fmt::format("'{}' is listed twice", m.name));
      s.models.push_back(std::move(m));
    }
  }

  void dtypes(SweepSpec& s, const YAML::Node& v) {
    s.dtypes.clear();
    for (const YAML::Node& x : list(v, "dtypes", true)) {
      std::string d = scalar(x, "dtypes");
      if (d != "int8" && d != "bf16") fail(x, "dtypes", fmt::format("'{}' is not int8 or bf16", d));
      if (std::find(s.dtypes.begin(), s.dtypes.end(), d) != s.dtypes.end()) fail(x, "dtypes", fmt::format("'{}' is listed twice", d));
      s.dtypes.push_back(d);
    }
  }

  void axes(SweepSpec& s, const YAML::Node& v) {
    std::set<std::string> taken;
    for (const YAML::Node& item : list(v, "axes")) {
      std::string at = fmt::format("axes[{}]", s.axes.size());
      auto f = fields(item, at, {"name", "key", "keys", "values", "scale"});
      Axis a;
      if (f.count("key") && f.count("keys")) fail(item, at, "give key or keys, not both");
      if (f.count("key")) a.keys.push_back(schema_key(f["key"], at + ".key"));
      if (f.count("keys"))
        for (const YAML::Node& k : list(f["keys"], at + ".keys")) a.keys.push_back(schema_key(k, at + ".keys"));
      for (const std::string& k : a.keys)
        if (!taken.insert(k).second && s.search.kind != SearchKind::kOneAtATime)
          fail(item, at, fmt::format("config key '{}' is already set by another axis", k),
               "in a grid each key belongs to one axis (combine them with keys: [...]); only one_at_a_time, which varies "
               "one axis at a time, lets axes share keys");
      if (f.count("values") == f.count("scale")) fail(item, at, "give values or scale (one of them)", "values: [...] lists the values; scale: [0.5, 1, 2] multiplies the base config's");
      a.name = f.count("name") ? scalar(f["name"], at + ".name") : join(a.keys, "+");
      if (f.count("values")) {
        bool keyed = !a.keys.empty();
        for (const YAML::Node& x : list(f["values"], at + ".values")) a.values.push_back(axis_value(a, keyed, x, at + ".values"));
      } else {
        if (a.keys.empty()) fail(item, at, "scale needs key or keys to scale");
        for (const YAML::Node& x : list(f["scale"], at + ".scale")) a.values.push_back(scaled_value(s, a, x, at + ".scale"));
      }
      if (a.name.empty()) a.name = join(a.keys, "+");
      std::set<std::string> labels;
      for (const AxisValue& av : a.values)
        if (!labels.insert(av.label).second) fail(f.count("values") ? f["values"] : f["scale"], at, fmt::format("value '{}' is listed twice", av.label));
      for (const Axis& other : s.axes)
        if (other.name == a.name) fail(item, at, fmt::format("another axis is also named '{}'", a.name), "give one of them a name:");
      for (size_t i = 0; i < a.values.size() && a.base_index < 0; ++i) {
        try {
          if (apply_sets(s.base_yaml, a.values[i].sets, "axis value") == s.base_config) a.base_index = int(i);
        } catch (const config::ConfigError&) {
          // valid only together with other axes' values
        }
      }
      axis_nodes_.push_back(item);
      s.axes.push_back(std::move(a));
    }
  }

  // `keyed`: the axis names its key(s) and each value is a scalar; else each value is a
  // mapping of config keys.
  AxisValue axis_value(Axis& a, bool keyed, const YAML::Node& x, const std::string& at) {
    AxisValue av;
    if (!keyed) {
      // A mapping of config keys: one point of several keys at once.
      if (!x.IsMap()) fail(x, at, "without key: each value is a mapping of config keys, e.g. {core.mxu.rows: 128, core.mxu.cols: 128}");
      std::vector<std::string> labels;
      for (const auto& [k, v] : fields(x, at, config_paths(), true)) {
        av.sets.push_back({k, value_text(v)});
        labels.push_back(k + "=" + av.sets.back().second);
        if (std::find(a.keys.begin(), a.keys.end(), k) == a.keys.end()) a.keys.push_back(k);
      }
      av.label = join(labels);
      av.number = double(a.values.size());
    } else {
      if (x.IsMap()) fail(x, at, "with key or keys, a value is a scalar (or a list for list keys)");
      av.label = value_text(x);
      for (const std::string& k : a.keys) av.sets.push_back({k, av.label});
      av.number = double(a.values.size());
      for (const auto& info : config::schema_keys())
        if (info.path == a.keys[0] && x.IsScalar() && config::parse_quantity(x.Scalar(), info.type, av.number).empty()) break;
    }
    check_config_keys(av.sets, x, at);
    return av;
  }

  AxisValue scaled_value(const SweepSpec& s, const Axis& a, const YAML::Node& x, const std::string& at) {
    AxisValue av;
    double factor = quantity(x, at, config::KeyType::kNumber);
    av.number = factor;
    av.label = fmt::format("{}x", x.Scalar());
    for (const std::string& k : a.keys) {
      std::optional<double> base = config::numeric_value(s.base_config, k);
      if (!base) fail(x, at, fmt::format("'{}' is not a numeric key; scale only multiplies numbers", k), "list its values with values: [...]");
      double v = *base * factor;
      config::KeyType type{};
      for (const auto& info : config::schema_keys())
        if (info.path == k) type = info.type;
      bool whole = type == config::KeyType::kInt || type == config::KeyType::kBytes;
      if (whole && v != std::floor(v))
        fail(x, at, fmt::format("{} x {} ({}) = {} is not a whole number", x.Scalar(), k, *base, v), "choose factors that keep integer keys whole");
      av.sets.push_back({k, whole ? fmt::format("{}", uint64_t(v)) : fmt::format("{}", v)});
    }
    check_config_keys(av.sets, x, at);
    return av;
  }

  void constraints(SweepSpec& s, const YAML::Node& v) {
    auto f = fields(v, "constraints", {"area_mm2", "power_w", "onchip_bytes", "memory_bytes"});
    if (f.count("area_mm2")) s.constraints.area_mm2 = quantity(f["area_mm2"], "constraints.area_mm2", config::KeyType::kNumber);
    if (f.count("power_w")) s.constraints.power_w = quantity(f["power_w"], "constraints.power_w", config::KeyType::kPower);
    if (f.count("onchip_bytes")) s.constraints.onchip_bytes = uint64_t(quantity(f["onchip_bytes"], "constraints.onchip_bytes", config::KeyType::kBytes));
    if (f.count("memory_bytes")) s.constraints.memory_bytes = uint64_t(quantity(f["memory_bytes"], "constraints.memory_bytes", config::KeyType::kBytes));
  }

  void search(SweepSpec& s, const YAML::Node& v) {
    auto f = fields(v, "search", {"kind", "samples", "seed", "rounds", "objectives"});
    if (f.count("kind")) {
      std::string k = scalar(f["kind"], "search.kind");
      if (k == "grid") s.search.kind = SearchKind::kGrid;
      else if (k == "random") s.search.kind = SearchKind::kRandom;
      else if (k == "pareto") s.search.kind = SearchKind::kPareto;
      else if (k == "one_at_a_time") s.search.kind = SearchKind::kOneAtATime;
      else fail(f["kind"], "search.kind", fmt::format("'{}' is not grid, random, pareto or one_at_a_time", k));
    }
    if (f.count("samples")) s.search.samples = uint64_t(ints(f["samples"], "search.samples", 1, 1e9, true)[0]);
    if (f.count("seed")) s.search.seed = uint64_t(ints(f["seed"], "search.seed", 0, 1e15, true)[0]);
    if (f.count("rounds")) s.search.rounds = int(ints(f["rounds"], "search.rounds", 0, 100, true)[0]);
    if (f.count("objectives")) {
      s.search.objectives = metric_list(f["objectives"], "search.objectives");
      if (s.search.objectives.size() < 2) fail(f["objectives"], "search.objectives", "a Pareto front needs at least two objectives");
    }
    bool sampled = s.search.kind == SearchKind::kRandom || s.search.kind == SearchKind::kPareto;
    if (sampled && !f.count("samples")) fail(v, "search.samples", "missing", "random and pareto searches start from this many random points");
  }

  std::vector<std::string> metric_list(const YAML::Node& v, const std::string& key) const {
    std::vector<std::string> out;
    for (const YAML::Node& x : list(v, key)) {
      std::string m = scalar(x, key);
      if (!find_metric(m)) {
        std::string guess = closest(m, metric_names());
        fail(x, key, fmt::format("'{}' is not a metric{}", m, guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess)),
             "metrics: " + join(metric_names()));
      }
      if (std::find(out.begin(), out.end(), m) != out.end()) fail(x, key, fmt::format("'{}' is listed twice", m));
      out.push_back(m);
    }
    return out;
  }

  // The grid must be countable, and one_at_a_time needs each axis to hold the base value.
  void check_grid(const SweepSpec& s, const YAML::Node& root) const {
    for (size_t i = 0; i < s.axes.size() && s.search.kind == SearchKind::kOneAtATime; ++i)
      if (s.axes[i].base_index < 0)
        fail(axis_nodes_[i], fmt::format("axes[{}]", i),
             fmt::format("one_at_a_time varies one axis at a time from the base config, but none of the values of '{}' "
                         "gives the base config",
                         s.axes[i].name),
             "add the base config's value to the axis (scale: 1, or the value itself)");
    double n = 0;
    for (const ModelSpec& m : s.models) n += double(m.batches.size());
    n *= double(s.dtypes.size());
    for (const Axis& a : s.axes) n *= double(a.values.size());
    if (n > 1e15) fail(root, "axes", fmt::format("the grid has {:.3g} points, more than vtpu counts", n), "use search: {kind: random, samples: N}");
  }

  std::string src_;
  fs::path dir_;
  std::vector<YAML::Node> axis_nodes_;
};

}  // namespace

SweepError::SweepError(std::string file, int line, int column, std::string key, std::string what, std::string hint)
    : UserError(format_error(file, line, column, key, what, hint)), key_(std::move(key)), line_(line) {}

std::string with_sets(const std::string& base_yaml, const std::vector<std::pair<std::string, std::string>>& sets) {
  YAML::Node root = YAML::Load(base_yaml);
  for (const auto& [key, value] : sets) {
    std::vector<std::string> parts = split(key, '.');
    YAML::Node at = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (!at[parts[i]] || !at[parts[i]].IsMap()) at[parts[i]] = YAML::Node(YAML::NodeType::Map);
      at.reset(at[parts[i]]);
    }
    at[parts.back()] = YAML::Load(value);
  }
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

config::Config apply_sets(const std::string& base_yaml, const std::vector<std::pair<std::string, std::string>>& sets,
                          const std::string& source_name) {
  return config::load_string(with_sets(base_yaml, sets), source_name);
}

SweepSpec parse_sweep(const std::string& yaml, const std::string& source_name, const fs::path& dir) {
  return Parser(source_name, dir).parse(yaml);
}

SweepSpec load_sweep(const fs::path& file) {
  if (fs::is_directory(file)) throw UserError(fmt::format("{}: is a directory, not a sweep file", file.string()));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open the sweep file (does it exist?)", file.string()));
  std::ostringstream t;
  t << in.rdbuf();
  SweepSpec s = parse_sweep(t.str(), file.string(), file.parent_path().empty() ? fs::path(".") : file.parent_path());
  s.file = file;
  return s;
}

}  // namespace vtpu::sweep
