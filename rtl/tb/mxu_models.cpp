// Binds every Verilated vtpu_mxu model of vtpu_rtl_models to the MxuPort interface.
#include <verilated.h>

#include <stdexcept>
#include <type_traits>

#include "mxu_harness.h"
#include "vtpu_rtl_models.h"

namespace vtpu::rtl {
namespace {

// Ports wider than 64 bits are VlWide<N> (32-bit words); narrower ones are integers.
// Every field accessed here is 16 or 32 bits wide at a multiple of its width, so it never
// straddles a 32-bit word.
template <class T>
void put_bits(T& port, unsigned lsb, unsigned width, uint32_t v) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t mask = (width >= 32 ? 0xFFFFFFFFull : ((1ull << width) - 1)) << lsb;
    port = static_cast<T>((uint64_t(port) & ~mask) | ((uint64_t(v) << lsb) & mask));
  } else {
    EData& w = port.at(lsb / 32);
    const unsigned off = lsb % 32;
    const uint32_t mask = (width >= 32 ? 0xFFFFFFFFu : ((1u << width) - 1)) << off;
    w = (w & ~mask) | ((v << off) & mask);
  }
}

template <class T>
uint32_t get_bits(const T& port, unsigned lsb, unsigned width) {
  const uint32_t mask = width >= 32 ? 0xFFFFFFFFu : ((1u << width) - 1);
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint32_t>(uint64_t(port) >> lsb) & mask;
  } else {
    return (port.at(lsb / 32) >> (lsb % 32)) & mask;
  }
}

template <class V>
class MxuModel final : public MxuPort {
 public:
  explicit MxuModel(MxuParams p) : p_(std::move(p)), ctx_(new VerilatedContext), m_(new V(ctx_.get(), "mxu")) {
    m_->clk = 0;
    m_->rst_n = 0;
    m_->eval();
  }
  ~MxuModel() override { m_->final(); }

  const MxuParams& params() const override { return p_; }

  void set_rst_n(bool v) override { m_->rst_n = v; }
  void set_mm(bool valid, unsigned rows, unsigned dst, bool acc, bool swap, bool bf16) override {
    m_->mm_valid = valid;
    m_->mm_rows = static_cast<uint16_t>(rows);
    m_->mm_dst = dst;
    m_->mm_acc = acc;
    m_->mm_swap = swap;
    m_->mm_bf16 = bf16;
  }
  void set_wl(bool valid) override { m_->wl_valid = valid; }
  void set_wf(bool avail, unsigned k, unsigned n) override {
    m_->wf_avail = avail;
    m_->wf_k = k;
    m_->wf_n = n;
  }
  void set_ext_write(bool we, unsigned addr, const uint32_t* row) override {
    m_->acc_ext_we = we;
    m_->acc_ext_addr = addr;
    if (row)
      for (unsigned n = 0; n < p_.cols; ++n) put_bits(m_->acc_ext_data, 32 * n, 32, row[n]);
  }
  void set_acc_rd_addr(unsigned addr) override { m_->acc_rd_addr = addr; }
  void set_in_data(const uint16_t* lanes) override {
    for (unsigned k = 0; k < p_.rows; ++k) put_bits(m_->in_data, 16 * k, 16, lanes[k]);
  }
  void set_wf_data(const uint16_t* lanes) override {
    for (unsigned n = 0; n < p_.cols; ++n) put_bits(m_->wf_data, 16 * n, 16, lanes[n]);
  }
  void eval() override { m_->eval(); }
  void tick() override {
    // Inputs set after the last eval() must settle before the edge: Verilator does not
    // order an input change and a clock edge given in one eval().
    m_->eval();
    m_->clk = 1;
    m_->eval();
    m_->clk = 0;
  }

  bool mm_data_free() const override { return m_->mm_data_free; }
  bool mm_shadow_ready() const override { return m_->mm_shadow_ready; }
  bool wl_ready() const override { return m_->wl_ready; }
  bool in_req() const override { return m_->in_req; }
  unsigned in_req_row() const override { return m_->in_req_row; }
  bool wf_pop() const override { return m_->wf_pop; }
  bool wf_rd() const override { return m_->wf_rd; }
  unsigned wf_row() const override { return m_->wf_row; }
  bool acc_we() const override { return m_->acc_we; }
  unsigned acc_waddr() const override { return m_->acc_waddr; }
  void acc_wdata(uint32_t* row) const override {
    for (unsigned n = 0; n < p_.cols; ++n) row[n] = get_bits(m_->acc_wdata, 32 * n, 32);
  }
  void acc_rd_data(uint32_t* row) const override {
    for (unsigned n = 0; n < p_.cols; ++n) row[n] = get_bits(m_->acc_rd_data, 32 * n, 32);
  }
  bool done() const override { return m_->done; }

 private:
  MxuParams p_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<V> m_;
};

}  // namespace

std::vector<MxuParams> mxu_models() {
  std::vector<MxuParams> v;
#define VTPU_RTL_LIST(name, cls, r, c, in, out, sh, acc, bf, preset) \
  v.push_back(MxuParams{#name, r, c, in, out, sh, acc, bf != 0, preset});
  VTPU_RTL_FOR_EACH_MXU(VTPU_RTL_LIST)
#undef VTPU_RTL_LIST
  return v;
}

std::unique_ptr<MxuPort> make_mxu(const std::string& which) {
#define VTPU_RTL_MAKE(name, cls, r, c, in, out, sh, acc, bf, preset)                    \
  if (which == #name)                                                                 \
    return std::make_unique<MxuModel<cls>>(MxuParams{#name, r, c, in, out, sh, acc, bf != 0, preset});
  VTPU_RTL_FOR_EACH_MXU(VTPU_RTL_MAKE)
#undef VTPU_RTL_MAKE
  throw std::invalid_argument("no Verilated MXU model named '" + which + "'");
}

}  // namespace vtpu::rtl
