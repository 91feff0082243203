// myops::myadd, the operator of PyTorch's dispatcher tutorial, with a kernel per device and an autograd
// formula, as an out-of-tree extension writes it against torch_opencl's public headers.
#include <torch/library.h>
#include <torch/autograd.h>

#include <torch_opencl/extension.h>

namespace {

// The opencl kernel. Each tensor arrives as its buffer and an element offset (tocl::BufferArg), so views
// that start inside a block work; sizes are arguments, so one program serves every shape.
const char* kMyAddSource = R"CLC(
__kernel void myadd(__global const float* a, ulong a_offset, __global const float* b, ulong b_offset,
                    __global float* out, ulong out_offset, ulong n) {
  const size_t i = get_global_id(0);
  if (i < n) out[out_offset + i] = a[a_offset + i] + b[b_offset + i];
}
)CLC";

void check_inputs(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes(), "myadd: a and b must have the same shape, got ", a.sizes(), " and ",
              b.sizes());
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "myadd: a and b must be float32, got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), "myadd: a and b must be on the same device, got ", a.device(), " and ",
              b.device());
}

at::Tensor myadd_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_inputs(a, b);
  at::Tensor a_c = a.contiguous(), b_c = b.contiguous();
  at::Tensor out = at::empty(a_c.sizes(), a_c.options());
  const float* pa = a_c.data_ptr<float>();
  const float* pb = b_c.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = pa[i] + pb[i];
  return out;
}

at::Tensor myadd_opencl(const at::Tensor& a, const at::Tensor& b) {
  check_inputs(a, b);
  at::Tensor a_c = a.contiguous(), b_c = b.contiguous();  // contiguous() runs on the device
  at::Tensor out = at::empty(a_c.sizes(), a_c.options());
  const uint64_t n = static_cast<uint64_t>(out.numel());
  if (n == 0) return out;
  const int device = torch_opencl::device_index(out);
  // Built once per device (and kept on disk); the kernel object is per thread.
  cl_kernel kernel = tocl::get_kernel(tocl::get_program(device, kMyAddSource), "myadd");
  tocl::set_args(kernel, torch_opencl::buffer_arg(a_c), torch_opencl::buffer_arg(b_c),
                 torch_opencl::buffer_arg(out), n);
  // On the current stream, in order with the operators before and after it.
  tocl::enqueue_1d(device, torch_opencl::current_stream_of(out), kernel, n);
  return out;
}

// The autograd formula: d(a + b)/da = d(a + b)/db = 1. Registered for the Autograd key, so it wraps the
// CPU and the opencl kernel alike; the backward's own additions dispatch by device as usual.
class MyAddFunction : public torch::autograd::Function<MyAddFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("myops::myadd", "").typed<at::Tensor(
        const at::Tensor&, const at::Tensor&)>();
    return op.call(a, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    return {grad_outputs[0], grad_outputs[0]};
  }
};

at::Tensor myadd_autograd(const at::Tensor& a, const at::Tensor& b) { return MyAddFunction::apply(a, b); }

}  // namespace

TORCH_LIBRARY(myops, m) { m.def("myadd(Tensor a, Tensor b) -> Tensor"); }

TORCH_LIBRARY_IMPL(myops, CPU, m) { m.impl("myadd", myadd_cpu); }

// PrivateUse1 is the dispatch key torch_opencl renames to "opencl".
TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) { m.impl("myadd", myadd_opencl); }

TORCH_LIBRARY_IMPL(myops, Autograd, m) { m.impl("myadd", myadd_autograd); }
