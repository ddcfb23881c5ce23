// Pools (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Pools read the unpadded input: each output pixel's window is clipped to the image (max
// over what it covers is max with -inf padding; an average divides by what it covers, or
// with count_include_pad by the window clipped to the padded image). Runs of output pixels
// with the same clipped window are one vec.maxpool/avgpool each: the interior of a row is
// one run, border pixels their own.
// The vector instructions of a pool of x into y for images [n0, n1), each with its
// estimated issue cycles; "{flag}" stands for the completion flag.
// x's first row is image x_first's (a convolution's two-image ring, gen_conv_packed).
std::vector<std::pair<std::string, uint64_t>> Codegen::pool_ops(tpu::PoolOp op, const Act& x, const Act& y, int64_t n0, int64_t n1,
                                                       int64_t x_first, std::vector<std::array<int64_t, 3>>* at) {
  std::string layer = op.getLayer().str();
  auto ys = shape_of(op.getOutput());
  int64_t N = n1 - n0, H = x.shape[1], W = x.shape[2], OH = ys[1], OW = ys[2];
  auto k = op.getKernel(), st = op.getStride(), pad = op.getPad();
  bool maxp = op.getKind() == "max", include_pad = op.getCountIncludePad();
  int64_t dh = op.getDilation() ? (*op.getDilation())[0] : 1, dw = op.getDilation() ? (*op.getDilation())[1] : 1;
  uint64_t px = R_ * esz_;
  std::vector<std::pair<std::string, uint64_t>> ops;
  // The taps [lo, hi) of a window (origin o, kk taps d apart) inside [0, size), and how
  // many lie inside the padded extent.
  struct Span {
    int64_t lo, hi, padded;
  };
  auto first_at = [](int64_t from, int64_t o, int64_t d) { return from <= o ? int64_t(0) : (from - o + d - 1) / d; };
  auto span = [&](int64_t o, int64_t kk, int64_t size, int64_t before, int64_t after, int64_t d) {
    int64_t lo = first_at(0, o, d), hi = std::min<int64_t>(kk, std::max<int64_t>(0, first_at(size, o, d)));
    int64_t plo = first_at(-before, o, d), phi = std::min<int64_t>(kk, std::max<int64_t>(0, first_at(size + after, o, d)));
    return Span{std::min(lo, kk), hi, std::max<int64_t>(0, phi - plo)};
  };
  struct Run {
    int64_t ox0, ox1;
    Span sx;
  };
  std::vector<Run> runs;
  for (int64_t ox = 0; ox < OW; ++ox) {
    Span sx = span(ox * st[1] - pad[2], k[1], W, pad[2], pad[3], dw);
    if (!runs.empty() && runs.back().sx.lo == sx.lo && runs.back().sx.hi == sx.hi && runs.back().sx.padded == sx.padded &&
        sx.lo == 0)  // a left-clipped window shifts its origin: those stay single
      runs.back().ox1 = ox + 1;
    else
      runs.push_back({ox, ox + 1, sx});
  }
  // One output pixel per image (a global pool): one instruction per lane block covers
  // every image, its rows an image apart.
  bool per_image = OH == 1 && OW == 1 && runs.size() == 1;
  for (uint64_t b = 0; b < x.blocks; ++b)
    for (int64_t n = n0; n < (per_image ? n0 + 1 : n1); ++n)
      for (int64_t oy = 0; oy < OH; ++oy) {
        int64_t y0 = oy * st[0] - pad[0];
        Span sy = span(y0, k[0], H, pad[0], pad[1], dh);
        for (const Run& r : runs) {
          int64_t x0 = r.ox0 * st[1] - pad[2];
          int64_t cnt = std::max<int64_t>(0, sy.hi - sy.lo) * std::max<int64_t>(0, r.sx.hi - r.sx.lo);
          if (cnt == 0) throw CompileError(fmt::format("node '{}': a pooling window covers only padding", layer));
          std::vector<int64_t> window;
          for (int64_t dy = sy.lo; dy < sy.hi; ++dy)
            for (int64_t dx = r.sx.lo; dx < r.sx.hi; ++dx)
              window.push_back(((dy - sy.lo) * dh * W + (dx - r.sx.lo) * dw) * int64_t(px));
          std::string body = fmt::format("window=[{}] pool_stride={}", fmt::join(window, ", "),
                                         per_image ? uint64_t(H * W) * px : uint64_t(st[1]) * px);
          int64_t divisor = include_pad ? sy.padded * r.sx.padded : cnt;
          std::string p = new_param(maxp ? body : body + fmt::format(" scale=[{}]", 1.0 / double(divisor)));
          uint64_t src = x.base + b * x.block_bytes + uint64_t(((n - x_first) * H + y0 + sy.lo * dh) * W + x0 + r.sx.lo * dw) * px;
          uint64_t dst = y.base + b * y.block_bytes + uint64_t((n * OH + oy) * OW + r.ox0) * px;
          uint64_t rows = uint64_t(per_image ? N : r.ox1 - r.ox0);
          std::string pool = maxp ? emit::vec_maxpool(ub_reg(2), ub_reg(1), rows, dtype_, emit::Param{p}, kPendingFlag)
                                  : emit::vec_avgpool(ub_reg(2), ub_reg(1), rows, dtype_, emit::Param{p}, kPendingFlag);
          ops.push_back({bundle({emit::li(reg(1), int64_t(src)), emit::li(reg(2), int64_t(dst))}) + "\n  " + pool + "\n",
                         config::vector_issue_cycles(cfg_, rows) * window.size()});
          if (at) at->push_back({int64_t(b), n, oy});
        }
      }
  return ops;
}

// Vector instructions ("{flag}" for their flag) one after the other, each waited for.
void Codegen::run_vector_ops(const std::vector<std::pair<std::string, uint64_t>>& ops) {
  for (auto& [text, occ] : ops) {
    code_ += with_flag(text, flags_.vector);
    code("  " + emit::wait(emit::flag(flags_.vector)));
  }
}

// The share of a pool that the convolution `host` runs beside its matmuls (planned:
// kBackgroundAttr, plan.cpp pool_background): the pool's instructions whose estimated
// vector cycles start in the share's thousandths, from the first not yet run. The first
// host generated allocates the pool's output, or declines for every host (the pool then
// runs at its turn) where the input is not in the unified buffer or the output would take
// more than half the room left.
std::vector<std::pair<std::string, uint64_t>> Codegen::hosted_pool_ops(tpu::Conv2DOp host) {
  auto share = host->getAttrOfType<mlir::DenseI64ArrayAttr>(kBackgroundAttr);
  if (!share || share.size() != 3) return {};
  auto id = mlir::IntegerAttr::get(mlir::IntegerType::get(host->getContext(), 64), share[0]);
  tpu::PoolOp pool;
  for (mlir::Operation* o = host->getNextNode(); o && !pool; o = o->getNextNode())
    if (o->getAttr(kIdAttr) == id) pool = mlir::dyn_cast<tpu::PoolOp>(o);
  auto it = pool ? hosted_pools_.find(pool.getOperation()) : hosted_pools_.end();
  if (!pool || (it == hosted_pools_.end() && !has_role(pool, "background")))
    throw InternalError(fmt::format("'{}': no pool numbered {} after it to run beside it", host.getLayer().str(), share[0]));
  if (it == hosted_pools_.end()) {
    HostedPool h;
    auto ys = shape_of(pool.getOutput());
    h.declined = !acts_.count(pool.getInput().getAsOpaquePointer()) || 2 * act_bytes(ys) > ub_.largest_free();
    if (h.declined) {
      drop_plan_role(pool);
    } else {
      h.y = new_act(ys, fmt::format("the output of '{}'", pool.getLayer().str()));
      const Act& x = act(pool.getInput());
      h.ops = pool_ops(pool, x, h.y, 0, x.shape[0]);
      for (const auto& o : h.ops) h.total += o.second;
    }
    it = hosted_pools_.emplace(pool.getOperation(), std::move(h)).first;
  }
  HostedPool& h = it->second;
  if (h.declined) {
    host->removeAttr(kBackgroundAttr);
    return {};
  }
  const auto& ops = h.ops;
  uint64_t at = 0;
  size_t first = ops.size(), last = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (first == ops.size() && at * 1000 >= uint64_t(share[1]) * h.total) first = i;
    if (at * 1000 >= uint64_t(share[2]) * h.total) {
      last = i;
      break;
    }
    at += ops[i].second;
  }
  first = std::max(first, h.next), last = std::max(last, first);
  h.next = last;
  return {ops.begin() + long(first), ops.begin() + long(last)};
}

// A pool that is a convolution's only use (planned: role "pool", plan.cpp pool_after),
// beside the convolution's matmuls: each output row's instructions as side work that
// starts once the blocks writing the rows its windows read (conv.cpp, ConvPlan::spans: each
// block's lane block and output rows) have their epilogues done. The output is allocated
// here; declined (the pool then runs at its turn) where it would take more than half the
// room left.
std::vector<SideWork> Codegen::pool_beside(tpu::Conv2DOp conv, const Act& out, const std::vector<std::array<uint64_t, 3>>& spans) {
  auto planned_pool = planned(conv, "pool");
  if (planned_pool.empty()) return {};
  auto pool = mlir::cast<tpu::PoolOp>(planned_pool[0]);
  auto ys = shape_of(pool.getOutput());
  if (2 * act_bytes(ys) > ub_.largest_free()) return decline(conv, "pool"), std::vector<SideWork>{};
  Act y = new_act(ys, fmt::format("the output of '{}'", pool.getLayer().str()));
  fused_pools_[pool.getOperation()] = y;
  std::vector<std::array<int64_t, 3>> at;
  auto ops = pool_ops(pool, out, y, 0, out.shape[0], 0, &at);
  int64_t H = out.shape[1], k = pool.getKernel()[0], st = pool.getStride()[0], pt = pool.getPad()[0];
  int64_t dh = pool.getDilation() ? (*pool.getDilation())[0] : 1;
  std::vector<SideWork> side;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto [b, n, oy] = at[i];
    int64_t lo = std::max<int64_t>(0, oy * st - pt), hi = std::min<int64_t>(H - 1, oy * st - pt + (k - 1) * dh);
    std::vector<size_t> deps;
    for (size_t j = 0; j < spans.size(); ++j)
      if (int64_t(spans[j][0]) == b && int64_t(spans[j][1]) <= n * H + hi && int64_t(spans[j][2]) > n * H + lo) deps.push_back(j);
    if (side.empty() || side.back().deps != deps) side.push_back({deps, {}});
    side.back().steps.push_back({ops[i].first, ops[i].second, false});
  }
  return side;
}

void Codegen::gen_pool(tpu::PoolOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  if (auto it = fused_pools_.find(op.getOperation()); it != fused_pools_.end()) {
    add_bound(layer, 0, 0);  // done along the convolution that produces its input (gen_conv_packed)
    define(op.getOutput(), it->second);
    return;
  }
  if (auto it = hosted_pools_.find(op.getOperation()); it != hosted_pools_.end() && !it->second.declined) {
    // Beside convolutions before it (hosted_pool_ops): what they did not run, here.
    const HostedPool& h = it->second;
    run_vector_ops({h.ops.begin() + long(std::min(h.next, h.ops.size())), h.ops.end()});
    add_bound(layer, 0, 0);
    define(op.getOutput(), h.y);
    return;
  }
  const Act& x = act(op.getInput());
  drop_plan_role(op);  // no host was generated (a host in another program part)
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  run_vector_ops(pool_ops(op, x, y, 0, x.shape[0]));
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
