// The fused LSTM and GRU cells that ATen's RNN code calls for accelerator tensors (nn.LSTM,
// nn.GRU, nn.LSTMCell, nn.GRUCell): _thnn_fused_lstm_cell / _thnn_fused_gru_cell and their
// backward kernels, with CUDA's gate order and workspace layout, composed from native ops.
// CPU has no kernels for these, so the fallback cannot serve them.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>

#include "aten/kernel_support/dtype_fallback.h"

namespace torch_opencl {
namespace {

using at::Tensor;

void check_cell(const char* op, const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& state,
                int64_t gates) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(), op,
              ": input_gates and hidden_gates must be 2-D of the same size, got ", input_gates.sizes(), " and ",
              hidden_gates.sizes());
  TORCH_CHECK(state.dim() == 2 && state.size(0) == input_gates.size(0) && input_gates.size(1) == gates * state.size(1),
              op, ": expected gates of size [", state.size(0), ", ", gates, " * ", state.size(1),
              "] for a state of size ", state.sizes(), ", got ", input_gates.sizes());
}

Tensor with_bias(const Tensor& gates, const std::optional<Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

// Gates in order input, forget, cell, output; the workspace holds them activated.
std::tuple<Tensor, Tensor, Tensor> lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
                                             const std::optional<Tensor>& input_bias,
                                             const std::optional<Tensor>& hidden_bias) {
  check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, 4);
  const Tensor gates = with_bias(with_bias(input_gates + hidden_gates, input_bias), hidden_bias);
  const auto chunks = gates.chunk(4, 1);
  const Tensor ig = chunks[0].sigmoid(), fg = chunks[1].sigmoid(), cg = chunks[2].tanh(), og = chunks[3].sigmoid();
  Tensor cy = at::addcmul(fg * cx, ig, cg);
  Tensor hy = og * cy.tanh();
  return {std::move(hy), std::move(cy), at::cat({ig, fg, cg, og}, 1)};
}

std::tuple<Tensor, Tensor, Tensor> lstm_cell_backward(const std::optional<Tensor>& grad_hy_opt,
                                                      const std::optional<Tensor>& grad_cy_opt, const Tensor& cx,
                                                      const Tensor& cy, const Tensor& workspace, bool has_bias) {
  const bool have_hy = grad_hy_opt.has_value() && grad_hy_opt->defined();
  const bool have_cy = grad_cy_opt.has_value() && grad_cy_opt->defined();
  if (!have_hy && !have_cy) return {Tensor(), Tensor(), Tensor()};
  const auto w = workspace.chunk(4, 1);
  const Tensor &ig = w[0], &fg = w[1], &cg = w[2], &og = w[3];
  const Tensor tanh_cy = cy.tanh();
  const Tensor grad_hy = have_hy ? *grad_hy_opt : at::zeros_like(cy);
  // d cy, through hy = og * tanh(cy) and the incoming grad_cy
  Tensor gcy = grad_hy * og * (1 - tanh_cy * tanh_cy);
  if (have_cy) gcy = gcy + *grad_cy_opt;
  const Tensor g_og = grad_hy * tanh_cy * og * (1 - og);
  const Tensor g_ig = gcy * cg * ig * (1 - ig);
  const Tensor g_fg = gcy * cx * fg * (1 - fg);
  const Tensor g_cg = gcy * ig * (1 - cg * cg);
  Tensor grad_gates = at::cat({g_ig, g_fg, g_cg, g_og}, 1);
  Tensor grad_cx = gcy * fg;
  Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {std::move(grad_gates), std::move(grad_cx), std::move(grad_bias)};
}

// Gates in order reset, update (input), new; the workspace holds r, z, n, the hidden part of
// the new gate (with its bias) and hx.
std::tuple<Tensor, Tensor> gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
                                    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, 3);
  const auto in = with_bias(input_gates, input_bias).chunk(3, 1);
  const auto hid = with_bias(hidden_gates, hidden_bias).chunk(3, 1);
  const Tensor rg = (in[0] + hid[0]).sigmoid();
  const Tensor ig = (in[1] + hid[1]).sigmoid();
  const Tensor ng = at::addcmul(in[2], rg, hid[2]).tanh();
  Tensor hy = at::addcmul(ng, ig, hx - ng);
  return {std::move(hy), at::cat({rg, ig, ng, hid[2], hx}, 1)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gru_cell_backward(const Tensor& grad_hy, const Tensor& workspace,
                                                                     bool has_bias) {
  const auto w = workspace.chunk(5, 1);
  const Tensor &rg = w[0], &ig = w[1], &ng = w[2], &hn = w[3], &hx = w[4];
  const Tensor g_ig = grad_hy * (hx - ng) * (1 - ig) * ig;
  Tensor grad_hx = grad_hy * ig;
  const Tensor g_in = grad_hy * (1 - ig) * (1 - ng * ng);
  const Tensor g_hn = g_in * rg;
  const Tensor g_rg = g_in * hn * (1 - rg) * rg;
  Tensor grad_input_gates = at::cat({g_rg, g_ig, g_in}, 1);
  Tensor grad_hidden_gates = at::cat({g_rg, g_ig, g_hn}, 1);
  Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
  Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
  return {std::move(grad_input_gates), std::move(grad_hidden_gates), std::move(grad_hx), std::move(grad_input_bias),
          std::move(grad_hidden_bias)};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace torch_opencl
