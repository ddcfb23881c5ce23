// LSTM and GRU, unrolled over their static time steps.
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

Importer::Rnn Importer::rnn_setup(const onnx::NodeProto& n, mlir::Location loc, int64_t gates,
                                  std::initializer_list<const char*> activations) {
  const std::string& op = n.op_type();
  Rnn r;
  r.gates = gates;
  r.batch_first = attr_i(n, "layout", 0) != 0;
  if (attr(n, "clip")) fail(op + " attribute clip is not supported", node_name(n));
  if (auto* a = attr(n, "activations")) {
    std::vector<const char*> want(activations);
    for (int i = 0; i < a->strings_size(); ++i)
      if (a->strings(i) != want[size_t(i) % want.size()])
        fail(fmt::format("{} activation '{}' is not supported (the defaults only)", op, a->strings(i)), node_name(n));
  }
  r.dir = attr_s(n, "direction", "forward");
  if (r.dir != "forward" && r.dir != "reverse" && r.dir != "bidirectional")
    fail(fmt::format("{} direction '{}' is not one of forward, reverse, bidirectional", op, r.dir), node_name(n));
  Tensor x = input(n, 0);
  if (x.shape.size() != 3) fail(op + " input X must be 3-D [seq, batch, input]", node_name(n));
  if (r.batch_first) x = {transpose(x.value, {1, 0, 2}, loc), {x.shape[1], x.shape[0], x.shape[2]}, false};
  r.T = x.shape[0], r.B = x.shape[1], r.I = x.shape[2];
  if (n.input_size() > 4 && !n.input(4).empty())
    for (float len : const_input(n, 4, "sequence_lens").data)
      if (int64_t(len) != r.T)
        fail(fmt::format("{} sequence_lens holds {}; only full-length sequences ({}) are supported", op, int64_t(len), r.T),
             node_name(n));
  r.W = &const_input(n, 1, "W");
  r.R = &const_input(n, 2, "R");
  r.dirs = r.dir == "bidirectional" ? 2 : 1;
  r.H = attr_i(n, "hidden_size", r.R->shape.size() == 3 ? r.R->shape[2] : 0);
  int64_t G = gates, H = r.H;
  if (r.W->shape != std::vector<int64_t>{r.dirs, G * H, r.I} || r.R->shape != std::vector<int64_t>{r.dirs, G * H, H})
    fail(fmt::format("{0} W must be [{1}, {2}, {3}] and R [{1}, {2}, {4}]", op, r.dirs, G * H, r.I, H), node_name(n));
  r.bias.assign(size_t(r.dirs * 2 * G * H), 0.0f);
  if (n.input_size() > 3 && !n.input(3).empty()) r.bias = const_input(n, 3, "B").data;
  if (r.bias.size() != size_t(r.dirs * 2 * G * H)) fail(fmt::format("{} B must have {} values", op, r.dirs * 2 * G * H), node_name(n));
  r.x2 = reshape(x.value, {r.T * r.B, r.I}, loc);
  return r;
}

// v [rows, K] x (gate g's rows of W or R)^T + b: a fully_connected (folded when v is constant).
Value Importer::rnn_fc(Rnn& r, Value v, int64_t rows, const float* w, int64_t K, const std::vector<float>& b, mlir::Location loc) {
  int64_t H = r.H;
  if (auto kc = v.getDefiningOp<mlir::tosa::ConstOp>()) {  // a constant state: the product is a constant too
    std::vector<float> in = tpu::float_values(kc.getValue()), out(size_t(rows * H));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < H; ++j) {
        double acc = b[size_t(j)];
        for (int64_t k = 0; k < K; ++k) acc += double(in[size_t(i * K + k)]) * w[j * K + k];
        out[size_t(i * H + j)] = float(acc);
      }
    return constant({rows, H}, out, loc);
  }
  Value& wc = r.weights[w];  // [N = H, K], TOSA's fully_connected layout
  if (!wc) wc = constant({H, K}, std::vector<float>(w, w + H * K), loc);
  return b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({rows, H}), v, wc, constant({H}, b, loc), nullptr).getResult();
}

// Initial state input `idx` ([dirs, B, H], or [B, dirs, H] batch first) for direction d.
Value Importer::rnn_state(const Rnn& r, const onnx::NodeProto& n, int idx, int64_t d, mlir::Location loc) {
  if (n.input_size() <= idx || n.input(idx).empty()) return nullptr;
  const Tensor& t = input(n, idx);
  int64_t B = r.B, H = r.H, dirs = r.dirs;
  if (t.shape != (r.batch_first ? std::vector<int64_t>{B, dirs, H} : std::vector<int64_t>{dirs, B, H}))
    fail(fmt::format("{} initial state (input {}) must be [{}, {}, {}]", n.op_type(), idx, dirs, B, H), node_name(n));
  if (auto k = constants_.find(n.input(idx)); k != constants_.end()) {  // a constant state: its slice, folded
    std::vector<float> v(size_t(B * H));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j)
        v[size_t(b * H + j)] = k->second.data[size_t(r.batch_first ? (b * dirs + d) * H + j : (d * B + b) * H + j)];
    return constant({B, H}, v, loc);
  }
  Value v = r.batch_first ? transpose(t.value, {1, 0, 2}, loc) : t.value;
  Value s = b_.create<mlir::tosa::SliceOp>(loc, tensor_type({1, B, H}), v, b_.getDenseI64ArrayAttr({d, 0, 0}),
                                          b_.getDenseI64ArrayAttr({1, B, H}));
  return reshape(s, {B, H}, loc);
}

// Runs the steps of every direction: `step(d, xw_t, h, c)` gets the step's input
// projections (one [B, H] per gate, biases included as `xw_bias` says) and updates the
// states. Defines Y, Y_h and (when `with_c`) Y_c.
void Importer::rnn_run(Rnn& r, const onnx::NodeProto& n, mlir::Location loc,
                       const std::function<std::vector<float>(int64_t d, int64_t g)>& xw_bias,
                       const std::function<void(int64_t d, std::vector<Value>& xw_t, Value& h, Value& c)>& step, bool with_c) {
  int64_t T = r.T, B = r.B, H = r.H, G = r.gates, dirs = r.dirs;
  auto type = tensor_type({B, H});
  std::vector<Value> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = r.dir == "reverse" || d == 1;
    // Hoisted: the input projections of all steps at once; PerStep: each step's own.
    const bool per_step = opt_.rnn_schedule == RnnSchedule::PerStep;
    auto w_of = [&](int64_t g) { return r.W->data.data() + (d * G * H + g * H) * r.I; };
    std::vector<Value> xw(static_cast<size_t>(G));
    for (int64_t g = 0; g < G && !per_step; ++g) xw[size_t(g)] = rnn_fc(r, r.x2, T * B, w_of(g), r.I, xw_bias(d, g), loc);
    Value h = rnn_state(r, n, 5, d, loc), c = with_c ? rnn_state(r, n, 6, d, loc) : Value();
    std::vector<Value> steps(static_cast<size_t>(T));
    for (int64_t s = 0; s < T; ++s) {
      int64_t t = reverse ? T - 1 - s : s;
      std::vector<Value> xw_t;
      Value x_t = per_step ? b_.create<mlir::tosa::SliceOp>(loc, tensor_type({B, r.I}), r.x2, b_.getDenseI64ArrayAttr({t * B, 0}),
                                                            b_.getDenseI64ArrayAttr({B, r.I}))
                                 .getResult()
                           : Value();
      for (int64_t g = 0; g < G; ++g)
        xw_t.push_back(per_step ? rnn_fc(r, x_t, B, w_of(g), r.I, xw_bias(d, g), loc)
                                : b_.create<mlir::tosa::SliceOp>(loc, type, xw[size_t(g)], b_.getDenseI64ArrayAttr({t * B, 0}),
                                                                 b_.getDenseI64ArrayAttr({B, H})).getResult());
      step(d, xw_t, h, c);
      steps[size_t(t)] = h;
    }
    Value y = T == 1 ? steps[0] : b_.create<mlir::tosa::ConcatOp>(loc, tensor_type({T * B, H}), steps, 0).getResult();
    ys.push_back(reshape(y, {T, 1, B, H}, loc));
    hs.push_back(reshape(h, {1, B, H}, loc));
    if (with_c) cs.push_back(reshape(c, {1, B, H}, loc));
  }
  auto join = [&](std::vector<Value>& v, std::vector<int64_t> shape, int32_t axis) {
    return v.size() == 1 ? v[0] : b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(shape), v, axis).getResult();
  };
  Value outs[3] = {join(ys, {T, dirs, B, H}, 1), join(hs, {dirs, B, H}, 0), with_c ? join(cs, {dirs, B, H}, 0) : Value()};
  std::vector<int64_t> shapes[3] = {{T, dirs, B, H}, {dirs, B, H}, {dirs, B, H}};
  if (r.batch_first) {  // Y [B, T, dirs, H], Y_h and Y_c [B, dirs, H]
    outs[0] = transpose(outs[0], {2, 0, 1, 3}, loc), shapes[0] = {B, T, dirs, H};
    for (int k : {1, 2})
      if (outs[k]) outs[k] = transpose(outs[k], {1, 0, 2}, loc), shapes[k] = {B, dirs, H};
  }
  for (int k = 0; k < n.output_size() && k < 3; ++k)
    if (!n.output(k).empty()) values_[n.output(k)] = {outs[k], shapes[k], false};
}

// LSTM (gate order i, o, f, c): i, o, f = sigmoid, g = tanh, c = f * c + i * g,
// h = o * tanh(c); peepholes add P * c to i and f (previous c) and o (new c).
void Importer::lstm(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"activations", "direction", "hidden_size", "layout", "clip", "input_forget", "activation_alpha",
                 "activation_beta"});
  if (attr_i(n, "input_forget", 0)) fail("LSTM attribute input_forget=1 is not supported", node_name(n));
  Rnn r = rnn_setup(n, loc, 4, {"Sigmoid", "Tanh", "Tanh"});
  int64_t B = r.B, H = r.H;
  std::vector<float> peep;  // [dirs, 3H]: i, o, f
  if (n.input_size() > 7 && !n.input(7).empty()) {
    peep = const_input(n, 7, "LSTM P").data;
    if (peep.size() != size_t(r.dirs * 3 * H)) fail(fmt::format("LSTM P must have {} values", r.dirs * 3 * H), node_name(n));
  }
  auto type = tensor_type({B, H});
  auto shift = b_.getI8IntegerAttr(0);
  auto peephole = [&](Value gate, Value state, int64_t d, int64_t k) -> Value {
    if (peep.empty() || !state) return gate;
    std::vector<float> pk(peep.begin() + (d * 3 + k) * H, peep.begin() + (d * 3 + k + 1) * H);
    if (auto kc = state.getDefiningOp<mlir::tosa::ConstOp>()) {  // a constant initial state: fold the product
      std::vector<float> prod;
      size_t j = 0;
      for (float v : tpu::float_values(kc.getValue())) prod.push_back(v * pk[j++ % size_t(H)]);
      return b_.create<mlir::tosa::AddOp>(loc, type, gate, constant({B, H}, prod, loc));
    }
    Value scaled = b_.create<mlir::tosa::MulOp>(loc, type, state, constant({1, H}, pk, loc), shift);
    return b_.create<mlir::tosa::AddOp>(loc, type, gate, scaled);
  };
  std::vector<float> zero(static_cast<size_t>(H), 0.0f);
  auto bias = [&](int64_t d, int64_t g) {  // Wb + Rb
    std::vector<float> b(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) b[size_t(j)] = r.bias[size_t(d * 8 * H + g * H + j)] + r.bias[size_t(d * 8 * H + 4 * H + g * H + j)];
    return b;
  };
  rnn_run(r, n, loc, bias, [&](int64_t d, std::vector<Value>& gate, Value& h, Value& c) {
    for (int64_t g = 0; g < 4; ++g)
      if (h) gate[size_t(g)] = b_.create<mlir::tosa::AddOp>(loc, type, gate[size_t(g)],
                                                            rnn_fc(r, h, B, r.R->data.data() + (d * 4 * H + g * H) * H, H, zero, loc));
    Value i = b_.create<mlir::tosa::SigmoidOp>(loc, type, peephole(gate[0], c, d, 0));
    Value f = b_.create<mlir::tosa::SigmoidOp>(loc, type, peephole(gate[2], c, d, 2));
    Value cand = b_.create<mlir::tosa::TanhOp>(loc, type, gate[3]);
    Value ig = b_.create<mlir::tosa::MulOp>(loc, type, i, cand, shift);
    c = c ? Value(b_.create<mlir::tosa::AddOp>(loc, type, b_.create<mlir::tosa::MulOp>(loc, type, f, c, shift), ig)) : ig;
    Value o = b_.create<mlir::tosa::SigmoidOp>(loc, type, peephole(gate[1], c, d, 1));
    h = b_.create<mlir::tosa::MulOp>(loc, type, o, b_.create<mlir::tosa::TanhOp>(loc, type, c), shift);
  }, /*with_c=*/true);
}

// GRU (gate order z, r, h): z, r = sigmoid; the candidate n = tanh(x Wh + (r * h) Rh + Rbh)
// (linear_before_reset = 0) or tanh(x Wh + r * (h Rh + Rbh)) (1); h = n + z * (h - n).
void Importer::gru(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"activations", "direction", "hidden_size", "layout", "clip", "linear_before_reset", "activation_alpha",
                 "activation_beta"});
  Rnn r = rnn_setup(n, loc, 3, {"Sigmoid", "Tanh"});
  bool lbr = attr_i(n, "linear_before_reset", 0) != 0;
  int64_t B = r.B, H = r.H;
  auto type = tensor_type({B, H});
  auto shift = b_.getI8IntegerAttr(0);
  auto rb = [&](int64_t d, int64_t g) {  // Rb of gate g
    return std::vector<float>(r.bias.begin() + d * 6 * H + 3 * H + g * H, r.bias.begin() + d * 6 * H + 3 * H + (g + 1) * H);
  };
  auto bias = [&](int64_t d, int64_t g) {  // Wb (+ Rb except for the candidate with linear_before_reset)
    std::vector<float> b(r.bias.begin() + d * 6 * H + g * H, r.bias.begin() + d * 6 * H + (g + 1) * H);
    if (g < 2 || !lbr)
      for (int64_t j = 0; j < H; ++j) b[size_t(j)] += rb(d, g)[size_t(j)];
    return b;
  };
  std::vector<float> zero(static_cast<size_t>(H), 0.0f);
  rnn_run(r, n, loc, bias, [&](int64_t d, std::vector<Value>& gate, Value& h, Value&) {
    auto recur = [&](Value v, int64_t g, const std::vector<float>& b) {
      return rnn_fc(r, v, B, r.R->data.data() + (d * 3 * H + g * H) * H, H, b, loc);
    };
    Value zpre = gate[0], rpre = gate[1], npre = gate[2];
    if (h) {
      zpre = b_.create<mlir::tosa::AddOp>(loc, type, zpre, recur(h, 0, zero));
      rpre = b_.create<mlir::tosa::AddOp>(loc, type, rpre, recur(h, 1, zero));
    }
    Value z = b_.create<mlir::tosa::SigmoidOp>(loc, type, zpre), rg = b_.create<mlir::tosa::SigmoidOp>(loc, type, rpre);
    if (lbr) {  // r * (h Rh + Rbh); with h = 0 that is r * Rbh
      Value hr = h ? recur(h, 2, rb(d, 2)) : constant({1, H}, rb(d, 2), loc);
      npre = b_.create<mlir::tosa::AddOp>(loc, type, npre, b_.create<mlir::tosa::MulOp>(loc, type, rg, hr, shift));
    } else if (h) {
      npre = b_.create<mlir::tosa::AddOp>(loc, type, npre, recur(b_.create<mlir::tosa::MulOp>(loc, type, rg, h, shift), 2, zero));
    }
    Value cand = b_.create<mlir::tosa::TanhOp>(loc, type, npre);
    Value diff = h ? Value(b_.create<mlir::tosa::SubOp>(loc, type, h, cand))
                   : Value(b_.create<mlir::tosa::MulOp>(loc, type, cand, constant({1, 1}, {-1.0f}, loc), shift));
    h = b_.create<mlir::tosa::AddOp>(loc, type, cand, b_.create<mlir::tosa::MulOp>(loc, type, z, diff, shift));
  }, /*with_c=*/false);
}

}  // namespace vtpu::compiler::onnx_import
