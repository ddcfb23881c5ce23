// onnxruntime through Node.js (vtpu/runtime/onnxruntime.h): inputs written as .npy files,
// runtime_driver/ort/ort_run.js run on the model, its outputs read back.
#include "vtpu/runtime/onnxruntime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "vtpu/support/child_process.h"

namespace vtpu::runtime {

std::filesystem::path ort_node_modules() {
  if (const char* d = std::getenv("VTPU_NODE_DIR"); d && *d) return std::filesystem::path(d) / "node_modules";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/root") / ".cache/vtpu/node/node_modules";
}

namespace {

// The script: $VTPU_ORT_SCRIPT, else the one in this source tree.
std::filesystem::path ort_script() {
  if (const char* s = std::getenv("VTPU_ORT_SCRIPT"); s && *s) return s;
  return VTPU_ORT_SCRIPT;
}

std::string read_text(const std::filesystem::path& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

OrtRun run_onnxruntime(const std::filesystem::path& model, const std::map<std::string, NpyArray>& feeds,
                       const std::filesystem::path& work_dir) {
  OrtRun r;
  std::filesystem::path modules = ort_node_modules();
  if (!std::filesystem::exists(modules / "onnxruntime-node")) {
    r.why_not = fmt::format("onnxruntime-node is not installed in {} (scripts/install-deps.sh installs it; VTPU_NODE_DIR "
                            "moves it)",
                            modules.string());
    return r;
  }
  static std::atomic<int> serial{0};
  std::filesystem::path dir = work_dir / fmt::format("vtpu_ort_{}_{}", ::getpid(), serial++);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir / "out");
  std::vector<std::string> argv = {"node", ort_script().string(), std::filesystem::absolute(model).string(), (dir / "out").string()};
  int k = 0;
  for (const auto& [name, a] : feeds) {
    std::filesystem::path f = dir / fmt::format("input{}.npy", k++);
    write_npy(f, a);
    argv.push_back(name + "=" + f.string());
  }
  std::filesystem::path log = dir / "log.txt";
  int rc = run_command(argv, {"NODE_PATH=" + modules.string()}, log);
  if (rc != 0) {
    std::string why = read_text(log);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    r.why_not = rc == -1 ? "node (Node.js) cannot be started; scripts/install-deps.sh installs it"
                         : fmt::format("onnxruntime failed (exit {}): {}", rc, why);
  } else {
    std::istringstream names(read_text(dir / "out/outputs.txt"));
    std::string name;
    for (int i = 0; std::getline(names, name); ++i) r.outputs[name] = read_npy(dir / "out" / fmt::format("output{}.npy", i));
    r.version = read_text(dir / "out/onnxruntime.txt");
    while (!r.version.empty() && r.version.back() == '\n') r.version.pop_back();
    r.ok = true;
  }
  std::filesystem::remove_all(dir, ec);
  return r;
}

std::vector<float> npy_as_floats(const NpyArray& a) {
  auto v = npy_values(a);
  if (!v) throw UserError(fmt::format("an array of NumPy type '{}' cannot be read as numbers", a.descr));
  return {v->begin(), v->end()};
}

}  // namespace vtpu::runtime
