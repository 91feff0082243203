#include "aten/native/grid_sample_gradient.h"

#include <ATen/ATen.h>

#include <vector>

#include "aten/native/segment_sum.h"

namespace torch_opencl {

at::Tensor grid_sample_input_gradient(const at::Tensor& grad_output, const at::Tensor& rows, const at::Tensor& weights,
                                      int64_t taps, at::IntArrayRef input_sizes) {
  const int64_t n = input_sizes[0], c = input_sizes[1], dims = static_cast<int64_t>(input_sizes.size()) - 2;
  int64_t spatial = 1, per_sample = 1;
  for (int64_t d = 2; d < dims + 2; ++d) spatial *= input_sizes[d];
  for (int64_t d = 2; d < grad_output.dim(); ++d) per_sample *= grad_output.size(d);
  const int64_t points = n * per_sample;
  // One row past the input takes the skipped taps.
  auto table = at::zeros({n * spatial + 1, c}, grad_output.options());
  if (points > 0 && c > 0) {
    auto contributions = grad_output.view({n, c, per_sample}).transpose(1, 2).unsqueeze(2) *
                         weights.view({n, per_sample, taps, 1});
    segment_sums_into(table, 0, rows, contributions.reshape({points * taps, c}), /*accumulate=*/true,
                      /*skip=*/n * spatial);
  }
  // (N, in..., C) -> (N, C, in...)
  std::vector<int64_t> channels_last{n}, order{0, dims + 1};
  for (int64_t d = 2; d < dims + 2; ++d) {
    channels_last.push_back(input_sizes[d]);
    order.push_back(d - 1);
  }
  channels_last.push_back(c);
  return table.narrow(0, 0, n * spatial).view(channels_last).permute(order).contiguous();
}

}  // namespace torch_opencl
