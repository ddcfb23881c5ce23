// vtpu-isa-gen: regenerates docs/isa.md's reference section and rtl/generated/vtpu_isa_pkg.sv
// from the ISA table, and the typed emitters vtpu/isa/emit.h (--cpp, at build time).
// Usage: vtpu-isa-gen --doc docs/isa.md --sv rtl/generated/vtpu_isa_pkg.sv [--cpp emit.h]
#include <fstream>
#include <iostream>
#include <sstream>

#include "vtpu/isa/docs.h"
#include "vtpu/support/error.h"

int main(int argc, char** argv) {
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string flag = argv[i], path = argv[i + 1];
      if (flag == "--doc") {
        std::ifstream in(path);
        if (!in) throw vtpu::UserError(path + ": cannot open");
        std::stringstream ss;
        ss << in.rdbuf();
        std::string out = vtpu::isa::splice_generated(ss.str(), vtpu::isa::generate_markdown_reference());
        std::ofstream(path) << out;
      } else if (flag == "--cpp") {
        std::ofstream(path) << vtpu::isa::generate_cpp_emitters();
      } else if (flag == "--sv") {
        std::ofstream(path) << vtpu::isa::generate_sv_package();
      } else {
        std::cerr << "usage: vtpu-isa-gen [--doc FILE.md] [--sv FILE.sv] [--cpp FILE.h]\n";
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "vtpu-isa-gen: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
