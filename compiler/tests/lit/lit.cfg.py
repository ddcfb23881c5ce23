# lit configuration for the compiler's pass tests: each .mlir file runs vtpu-opt and
# FileCheck on its RUN lines.
import os
import lit.formats

config.name = "vtpu-compiler"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.environ.get("VTPU_LIT_EXEC_ROOT", config.test_source_root)
tools = os.environ["VTPU_LIT_TOOLS"]  # directory of vtpu-opt
llvm_bin = "/usr/lib/llvm-19/bin"
config.environment["PATH"] = os.pathsep.join([tools, llvm_bin, os.environ.get("PATH", "")])
