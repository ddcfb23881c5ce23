// Control flow and the inputs that decide it (compiler/import/control.cpp, fixed_inputs.cpp):
// an If whose condition is known when compiling (a constant, a shape, an input fixed with
// --fix) runs the branch it takes, on the chip, checked against values worked out here; an If
// decided at run time is refused naming the input to fix; and opset 18's changed operators
// (compiler/import/opset.cpp) compile to the same program as their opset 17 forms.
#include "e2e_fixture.h"

#include <fmt/format.h>
#include <unistd.h>

namespace vtpu::compiler {
namespace {

// A branch graph: `nodes` built by `fill` on a builder of its own (its initializers included),
// returning `out`.
onnx::GraphProto branch(const std::string& name, const std::string& out, const std::function<void(OnnxBuilder&)>& fill) {
  OnnxBuilder b(16);
  fill(b);
  onnx::GraphProto g = b.model().graph();
  g.set_name(name);
  g.clear_input();
  g.clear_output();
  g.add_output()->set_name(out);
  return g;
}

onnx::NodeProto* if_node(OnnxBuilder& m, const std::string& name, const std::string& cond, std::vector<std::string> outs,
                         onnx::GraphProto then_g, onnx::GraphProto else_g) {
  auto* n = m.node("If", name, {cond}, std::move(outs));
  for (auto [attr_name, g] : {std::pair{"then_branch", &then_g}, std::pair{"else_branch", &else_g}}) {
    auto* a = n->add_attribute();
    a->set_name(attr_name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = *g;
  }
  return n;
}

// y = If(sr == 16000) then Relu(x) * 2 (a constant of the branch) else -x, as voice-activity
// models choose their network by sample rate.
std::filesystem::path sample_rate_model(bool scalar = true) {
  OnnxBuilder m(16);
  m.input("x", {1, 8});
  m.input("sr", scalar ? std::vector<int64_t>{} : std::vector<int64_t>{1}, onnx::TensorProto::INT64);
  m.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // rank 0 or 1
  m.init_i64("k16000", {16000});
  m.node("Squeeze", "k", {"k16000"}, {"k"});
  m.node("Equal", "is16k", {"sr", "k"}, {"c"});
  auto then_g = branch("then", "y_then", [](OnnxBuilder& b) {
    b.node("Relu", "relu", {"x"}, {"r"});
    b.init("two", {1}, 0.0f, {2.0f});
    b.node("Mul", "double", {"r", "two"}, {"y_then"});
  });
  auto else_g = branch("else", "y_else", [](OnnxBuilder& b) { b.node("Neg", "neg", {"x"}, {"y_else"}); });
  if_node(m, "by_rate", "c", {"y"}, then_g, else_g);
  m.output("y", {1, 8});
  return m.save(fmt::format("vtpu_if_rate{}_{}.onnx", scalar ? 0 : 1, ::getpid()));
}

Vec run_on_chip(const std::filesystem::path& model, const CompileOptions& o, const Vec& x) {
  auto cfg = config::load_preset("tiny-16x16");
  isa::Program p = compile_onnx(model, cfg, o).program;
  for (const auto& t : p.tensors)
    EXPECT_FALSE(t.role == isa::TensorRole::Input && t.name == "sr") << "a fixed input is no program input";
  std::string out = simulate(cfg, p, {{"x", encode(p, "x", x)}}, "y");
  EXPECT_EQ(out.substr(0, 2), "OK") << out;
  return decode(p, "y", out.substr(2));
}

TEST(ControlFlow, AnIfOnAFixedInputRunsTheBranchItTakes) {
  auto model = sample_rate_model();
  Vec x{-2, -1, -0.5, 0, 0.25, 0.5, 1, 3};
  CompileOptions o;
  o.fixed = {{"sr", "16000"}};
  Vec want16, want8;
  for (float v : x) want16.push_back(std::max(v, 0.0f) * 2), want8.push_back(-v);
  EXPECT_EQ(run_on_chip(model, o, x), want16);  // exact in bf16: small dyadic values
  o.fixed = {{"sr", "8000"}};
  EXPECT_EQ(run_on_chip(model, o, x), want8);
}

TEST(ControlFlow, AnIfDecidedAtRunTimeNamesTheInputToFix) {
  // sr of shape [1]: a run-time input the If depends on.
  try {
    compile_onnx(sample_rate_model(false), config::load_preset("tiny-16x16"), {});
    FAIL() << "an If on an input the program takes must be refused";
  } catch (const CompileError& e) {
    std::string m = e.what();
    // The Equal on it compiles (0/1 arithmetic on integers, logical.cpp); the If cannot
    // take a condition known only at run time.
    EXPECT_NE(m.find("node 'by_rate': the condition 'c' of If is computed at run time from input(s) sr"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("--fix sr=VALUE"), std::string::npos) << m;
  }
  // An If on a bool input (a program input like any other, 0/1 in int32): the If cannot
  // take it at run time, and the error says to fix it.
  OnnxBuilder m(16);
  m.input("x", {1, 8});
  m.input("flag", {1}, onnx::TensorProto::BOOL);
  if_node(m, "by_flag", "flag", {"y"}, branch("t", "yt", [](OnnxBuilder& b) { b.node("Relu", "r", {"x"}, {"yt"}); }),
          branch("e", "ye", [](OnnxBuilder& b) { b.node("Neg", "n", {"x"}, {"ye"}); }));
  m.output("y", {1, 8});
  auto flag_model = m.save(fmt::format("vtpu_if_flag_{}.onnx", ::getpid()));
  try {
    compile_onnx(flag_model, config::load_preset("tiny-16x16"), {});
    FAIL() << "an If on a bool input must be refused";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'by_flag': the condition 'flag' of If is computed at run time from input(s) flag"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--fix flag=true or --fix flag=false"), std::string::npos)
        << e.what();
  }
  CompileOptions fixed;
  fixed.fixed = {{"flag", "true"}};
  Vec x{-2, -1, -0.5, 0, 0.25, 0.5, 1, 3};
  EXPECT_EQ(run_on_chip(flag_model, fixed, x), relu(x));
  // A scalar sr the program cannot take as an input at all: the error says to fix it.
  try {
    compile_onnx(sample_rate_model(true), config::load_preset("tiny-16x16"), {});
    FAIL() << "a scalar input must be fixed";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("--fix sr=VALUE"), std::string::npos) << e.what();
  }
  // Fixed, the [1] form runs too.
  CompileOptions o;
  o.fixed = {{"sr", "8000"}};
  Vec want;
  for (float v : x) want.push_back(-v);
  EXPECT_EQ(run_on_chip(sample_rate_model(false), o, x), want);
}

TEST(ControlFlow, FixErrorsSayWhatIsWrong) {
  auto model = sample_rate_model();
  auto cfg = config::load_preset("tiny-16x16");
  auto error = [&](FixedInputs f) {
    CompileOptions o;
    o.fixed = std::move(f);
    try {
      compile_onnx(model, cfg, o);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error({{"rate", "1"}}).find("the model has no input 'rate'; its inputs are: x sr"), std::string::npos)
      << error({{"rate", "1"}});
  EXPECT_NE(error({{"sr", "16k"}}).find("value 0 ('16k') is not an integer"), std::string::npos) << error({{"sr", "16k"}});
  EXPECT_NE(error({{"sr", "1,2"}}).find("has 1 element(s); give 1 value(s)"), std::string::npos) << error({{"sr", "1,2"}});
  EXPECT_NE(error({{"sr", "99999999999999999999"}}).find("is not an integer"), std::string::npos);
  EXPECT_NE(error({{"x", "a"}}).find("is not a number"), std::string::npos) << error({{"x", "a"}});
}

TEST(ControlFlow, NestedIfsOnShapesFoldWithoutFixing) {
  // Outer: If(Shape(x)[1] == 8) then { If(Size(x) > 100) then Neg(x) else Relu(x) } else x + x.
  // Shapes are static, so both conditions fold: y = Relu(x). The inner branch reads x from two
  // scopes out.
  OnnxBuilder m(16);
  m.input("x", {1, 8});
  m.node("Shape", "shape", {"x"}, {"s"});
  m.init_i64("one", {1});
  m.node("Gather", "w", {"s", "one"}, {"w"});
  m.init_i64("eight", {8});
  m.node("Equal", "is8", {"w", "eight"}, {"c"});
  auto inner_then = branch("neg", "yn", [](OnnxBuilder& b) { b.node("Neg", "neg", {"x"}, {"yn"}); });
  auto inner_else = branch("relu", "yr", [](OnnxBuilder& b) { b.node("Relu", "relu", {"x"}, {"yr"}); });
  auto outer_then = branch("outer_then", "yi", [&](OnnxBuilder& b) {
    b.node("Size", "size", {"x"}, {"n"});
    b.init_i64("hundred", {100});
    b.node("Greater", "big", {"n", "hundred"}, {"big1"});
    b.node("Squeeze", "big0", {"big1"}, {"big"});
    if_node(b, "inner", "big", {"yi"}, inner_then, inner_else);
  });
  auto outer_else = branch("outer_else", "ya", [](OnnxBuilder& b) { b.node("Add", "twice", {"x", "x"}, {"ya"}); });
  if_node(m, "outer", "c", {"y"}, outer_then, outer_else);
  m.output("y", {1, 8});
  auto model = m.save(fmt::format("vtpu_if_nested_{}.onnx", ::getpid()));
  Vec x{-2, -1, -0.5, 0, 0.25, 0.5, 1, 3};
  EXPECT_EQ(run_on_chip(model, {}, x), relu(x));
}

TEST(ControlFlow, LoopsAreRefusedByName) {
  OnnxBuilder m(16);
  m.input("x", {1, 8});
  m.init_i64("trips", {2});
  m.model().mutable_graph()->add_initializer()->CopyFrom(m.model().graph().initializer(0));
  auto* cond = m.model().mutable_graph()->mutable_initializer(1);
  cond->set_name("go");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->clear_int64_data();
  cond->add_int32_data(1);
  auto body = branch("body", "x", [](OnnxBuilder&) {});
  auto* n = m.node("Loop", "loop", {"trips", "go"}, {"y"});
  auto* a = n->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  m.output("y", {1, 8});
  auto model = m.save(fmt::format("vtpu_loop_{}.onnx", ::getpid()));
  try {
    compile_onnx(model, config::load_preset("tiny-16x16"), {});
    FAIL() << "Loop must be refused";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("of control flow only If is supported"), std::string::npos) << e.what();
  }
}

// The same small network written at opset 17 and at opset 18 (reductions' axes as an input,
// Split's num_outputs, Resize's new attributes at their defaults).
std::filesystem::path reduce_split_resize(int opset) {
  OnnxBuilder m(opset);
  m.input("x", {1, 4, 4, 4});
  auto* mean = m.node("ReduceMean", "mean", opset == 18 ? std::vector<std::string>{"x", "axes"} : std::vector<std::string>{"x"},
                      {"mu"});
  if (opset == 18) m.init_i64("axes", {1});
  else OnnxBuilder::attr(mean, "axes", std::vector<int64_t>{1});
  m.node("Sub", "centre", {"x", "mu"}, {"xc"});
  auto* split = m.node("Split", "halves", {"xc"}, {"a", "b"});
  OnnxBuilder::attr(split, "axis", int64_t(1));
  if (opset == 18) OnnxBuilder::attr(split, "num_outputs", int64_t(2));
  m.node("Mul", "gate", {"a", "b"}, {"g"});
  m.init("scales", {4}, 0.0f, {1, 1, 2, 2});
  auto* r = m.node("Resize", "up", {"g", "", "scales"}, {"y"});
  OnnxBuilder::attr_s(r, "mode", "nearest");
  if (opset == 18) {
    OnnxBuilder::attr(r, "antialias", int64_t(0));
    OnnxBuilder::attr_s(r, "keep_aspect_ratio_policy", "stretch");
  }
  m.output("y", {1, 2, 8, 8});
  return m.save(fmt::format("vtpu_opset{}_{}.onnx", opset, ::getpid()));
}

TEST(Opsets, Opset18CompilesAsItsOpset17Form) {
  auto cfg = config::load_preset("tiny-16x16");
  for (auto p : {Precision::Bf16, Precision::Int8}) {
    CompileOptions o;
    o.precision = p;
    EXPECT_EQ(compile_onnx(reduce_split_resize(18), cfg, o).assembly, compile_onnx(reduce_split_resize(17), cfg, o).assembly);
  }
}

TEST(Opsets, Opset18FormsWithoutAnOpset17OneAreRefusedByName) {
  OnnxBuilder m(18);
  m.input("x", {1, 4, 4, 4});
  m.init("scales", {4}, 0.0f, {1, 1, 2, 2});
  auto* r = m.node("Resize", "aa", {"x", "", "scales"}, {"y"});
  OnnxBuilder::attr(r, "antialias", int64_t(1));
  m.output("y", {1, 4, 8, 8});
  try {
    compile_onnx(m.save(fmt::format("vtpu_opset18_aa_{}.onnx", ::getpid())), config::load_preset("tiny-16x16"), {});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'aa': Resize with antialias = 1 is not supported (opset 18"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vtpu::compiler
