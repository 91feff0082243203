#include "aten/distributed/staging_backend.h"

#include <ATen/EmptyTensor.h>

#include <numeric>

#include "aten/host_allocator.h"
#include "runtime/stream.h"

namespace torch_opencl::distributed {

using c10d::OpType;
using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;
using TensorList = std::vector<at::Tensor>;

namespace {

constexpr auto kOpenCL = c10::DeviceType::PrivateUse1;

std::string dtype_name(at::ScalarType t) { return std::string(c10::getDtypeNames(t).first); }

// "float32 x 12, int64 x 3": what gloo needs every rank to agree on (element counts, not shapes).
std::string describe(const TensorList& tensors) {
  std::string s;
  for (const auto& t : tensors) s += c10::str(s.empty() ? "" : ", ", dtype_name(t.scalar_type()), " x ", t.numel());
  return s.empty() ? "no tensors" : s;
}

const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNKNOWN";
  }
}

}  // namespace

// Builds one StagedCall: checks the tensors, gives each a host buffer, says which are read and written.
class CallBuilder {
 public:
  CallBuilder(StagingBackend& backend, const char* name, OpType op) : backend_(backend), name_(name), op_(op) {
    call_ = std::make_unique<StagedCall>();
  }

  // Every tensor of a call: on one opencl device, dense. `role` names it in errors ("output[1]").
  CallBuilder& check(const at::Tensor& t, const std::string& role) {
    TORCH_CHECK(t.defined(), "opencl_gloo ", name_, ": ", role, " is an undefined tensor");
    TORCH_CHECK(t.device().type() == kOpenCL, "opencl_gloo ", name_, ": ", role, " is a ", t.device(),
                " tensor, but this call runs on the opencl backend: every tensor of one call must be on the same "
                "opencl device (move it with .to(\"opencl:",
                device_ < 0 ? 0 : device_, "\"), or call the collective with CPU tensors only)");
    TORCH_CHECK(t.layout() == c10::kStrided, "opencl_gloo ", name_, ": ", role, " is a ", t.layout(),
                " tensor; only dense (strided) tensors are supported");
    if (device_ < 0) {
      device_ = t.device().index();
      first_role_ = role;
    }
    TORCH_CHECK(t.device().index() == device_, "opencl_gloo ", name_, ": ", role, " is on ", t.device(), " but ",
                first_role_, " is on opencl:", device_, ": the tensors of one call must be on one opencl device");
    return *this;
  }
  CallBuilder& check(const TensorList& ts, const std::string& role) {
    for (size_t i = 0; i < ts.size(); ++i) check(ts[i], c10::str(role, "[", i, "]"));
    return *this;
  }
  CallBuilder& check(const std::vector<TensorList>& ts, const std::string& role) {
    for (size_t i = 0; i < ts.size(); ++i)
      for (size_t j = 0; j < ts[i].size(); ++j) check(ts[i][j], c10::str(role, "[", i, "][", j, "]"));
    return *this;
  }

  // The reduce op gloo runs: AVG becomes SUM and a division of `tensors`' results by the group size.
  c10d::ReduceOp reduce_op(const c10d::ReduceOp& op, const TensorList& tensors) {
    TORCH_CHECK(op.op_ != c10d::ReduceOp::PREMUL_SUM, "opencl_gloo ", name_,
                ": ReduceOp.PREMUL_SUM is not supported (gloo has no such reduction); use SUM and scale the tensor");
    op_text_ = op_name(op.op_);
    if (op.op_ != c10d::ReduceOp::AVG) return op;
    for (const auto& t : tensors)
      TORCH_CHECK(at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()), "opencl_gloo ", name_,
                  ": ReduceOp.AVG needs floating-point tensors, got ", dtype_name(t.scalar_type()),
                  "; use SUM and divide");
    average_ = true;
    return c10d::ReduceOp(c10d::ReduceOp::SUM);
  }

  // A host buffer gloo reads, copied from `t` when the call starts.
  at::Tensor in(const at::Tensor& t) { return in(t, pinned_like(t)); }
  at::Tensor in(const at::Tensor& t, const at::Tensor& host) {
    call_->inputs.emplace_back(t, host);
    return host;
  }
  // A host buffer gloo writes, copied back into `t` when the call completes.
  at::Tensor out(const at::Tensor& t) { return out(t, pinned_like(t)); }
  at::Tensor out(const at::Tensor& t, const at::Tensor& host) {
    call_->results.emplace_back(t, host);
    outputs_.push_back(t);
    if (average_) call_->average.push_back(host);
    return host;
  }
  at::Tensor inout(const at::Tensor& t) { return out(t, in(t)); }
  TensorList in(const TensorList& ts) { return map(ts, [this](const at::Tensor& t) { return in(t); }); }
  TensorList out(const TensorList& ts) { return map(ts, [this](const at::Tensor& t) { return out(t); }); }
  TensorList inout(const TensorList& ts) { return map(ts, [this](const at::Tensor& t) { return inout(t); }); }

  // What every rank must pass alike; leave unset for point-to-point calls.
  CallBuilder& agree(const std::string& what) {
    call_->signature = c10::str(name_, op_text_.empty() ? "" : "(" + op_text_ + ")", " ", what);
    return *this;
  }
  CallBuilder& layout(std::vector<int64_t> mine,
                      std::function<std::string(const std::vector<std::vector<int64_t>>&)> check) {
    call_->layout = std::move(mine);
    call_->check_layout = std::move(check);
    return *this;
  }
  CallBuilder& then(std::function<WorkPtr(c10d::Work&)> next) {
    call_->then = std::move(next);
    return *this;
  }
  CallBuilder& any_source() {
    call_->any_source = true;
    return *this;
  }

  CallBuilder& point_to_point() {
    call_->point_to_point = true;
    return *this;
  }

  WorkPtr submit(std::function<WorkPtr(c10d::Backend&)> start) {
    if (device_ >= 0) call_->called.record(device_, tocl::current_stream(device_));
    call_->device = device_;
    auto gloo = backend_.gloo_;
    call_->start = [gloo, start = std::move(start)] { return start(*gloo); };
    std::optional<c10::Device> device;
    if (device_ >= 0) device = c10::Device(kOpenCL, static_cast<c10::DeviceIndex>(device_));
    call_->work = c10::make_intrusive<StagingWork>(backend_.getRank(), op_, name_, outputs_, device, backend_.timeout());
    return backend_.submit(std::move(call_));
  }

 private:
  template <typename F>
  TensorList map(const TensorList& ts, F f) {
    TensorList r;
    r.reserve(ts.size());
    for (const auto& t : ts) r.push_back(f(t));
    return r;
  }

 public:
  static at::Tensor pinned(at::IntArrayRef sizes, at::ScalarType dtype) {
    return at::detail::empty_generic(sizes, host_allocator(), c10::DispatchKeySet(c10::DispatchKey::CPU), dtype,
                                     std::nullopt);
  }
  static at::Tensor pinned_like(const at::Tensor& t) { return pinned(t.sizes(), t.scalar_type()); }

 private:

  StagingBackend& backend_;
  const char* name_;
  OpType op_;
  std::unique_ptr<StagedCall> call_;
  TensorList outputs_;
  int device_ = -1;
  std::string first_role_;
  std::string op_text_;
  bool average_ = false;
};

namespace {

// Ranks r and p agree when what r sends to p (mine[p]) is what p expects from r (theirs[size + r]).
std::function<std::string(const std::vector<std::vector<int64_t>>&)> exchange_check(const char* name,
                                                                                     const char* unit) {
  return [name, unit](const std::vector<std::vector<int64_t>>& all) -> std::string {
    const auto size = static_cast<int64_t>(all.size());
    for (int64_t r = 0; r < size; ++r)
      for (int64_t p = 0; p < size; ++p)
        if (all[r][p] != all[p][size + r])
          return c10::str(name, ": rank ", r, " sends ", all[r][p], " ", unit, " to rank ", p, ", but rank ", p,
                          " expects ", all[p][size + r], " from rank ", r,
                          " (its output split sizes must mirror the other ranks' input split sizes)");
    return "";
  };
}

}  // namespace

StagingBackend::StagingBackend(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size,
                               std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      gloo_(std::move(gloo)),
      timeout_ms_(timeout.count()),
      queue_(std::make_unique<CommQueue>(gloo_, rank, size, timeout)) {}

StagingBackend::~StagingBackend() = default;

void StagingBackend::setTimeout(std::chrono::milliseconds timeout) {
  gloo_->setTimeout(timeout);
  queue_->set_timeout(timeout);
  timeout_ms_ = timeout.count();
}

WorkPtr StagingBackend::submit(std::unique_ptr<StagedCall> call) {
  c10::intrusive_ptr<StagingWork> work = call->work;
  queue_->submit(std::move(call));
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void StagingBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "opencl_gloo: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_.clear();
}

WorkPtr StagingBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "opencl_gloo: endCoalescing called without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(getRank(), std::move(coalesced_));
}

WorkPtr StagingBackend::broadcast(TensorList& tensors, const c10d::BroadcastOptions& opts) {
  CallBuilder b(*this, "broadcast", OpType::BROADCAST);
  b.check(tensors, "tensor");
  auto host = opts.rootRank == getRank() ? b.inout(tensors) : b.out(tensors);
  b.agree(c10::str("root=", opts.rootRank, " ", describe(tensors)));
  return b.submit([host, opts](c10d::Backend& g) mutable { return g.broadcast(host, opts); });
}

WorkPtr StagingBackend::allreduce(TensorList& tensors, const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(!opts.sparseIndices.has_value(), "opencl_gloo all_reduce: sparse tensors are not supported");
  CallBuilder b(*this, "all_reduce", OpType::ALLREDUCE);
  b.check(tensors, "tensor");
  auto o = opts;
  o.reduceOp = b.reduce_op(opts.reduceOp, tensors);
  auto host = b.inout(tensors);
  b.agree(describe(tensors));
  return b.submit([host, o](c10d::Backend& g) mutable { return g.allreduce(host, o); });
}

WorkPtr StagingBackend::allreduce_coalesced(TensorList& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  CallBuilder b(*this, "all_reduce_coalesced", OpType::ALLREDUCE_COALESCED);
  b.check(tensors, "tensor");
  auto o = opts;
  o.reduceOp = b.reduce_op(opts.reduceOp, tensors);
  auto host = b.inout(tensors);
  b.agree(describe(tensors));
  return b.submit([host, o](c10d::Backend& g) mutable { return g.allreduce_coalesced(host, o); });
}

WorkPtr StagingBackend::reduce(TensorList& tensors, const c10d::ReduceOptions& opts) {
  CallBuilder b(*this, "reduce", OpType::REDUCE);
  b.check(tensors, "tensor");
  auto o = opts;
  o.reduceOp = b.reduce_op(opts.reduceOp, tensors);
  auto host = b.inout(tensors);
  b.agree(c10::str("root=", opts.rootRank, " ", describe(tensors)));
  return b.submit([host, o](c10d::Backend& g) mutable { return g.reduce(host, o); });
}

WorkPtr StagingBackend::allgather(std::vector<TensorList>& outputs, TensorList& inputs,
                                  const c10d::AllgatherOptions& opts) {
  CallBuilder b(*this, "all_gather", OpType::ALLGATHER);
  b.check(inputs, "input").check(outputs, "output");
  auto host_in = b.in(inputs);
  std::vector<TensorList> host_out;
  for (auto& o : outputs) host_out.push_back(b.out(o));
  b.agree(describe(inputs));
  return b.submit([host_out, host_in, opts](c10d::Backend& g) mutable { return g.allgather(host_out, host_in, opts); });
}

WorkPtr StagingBackend::_allgather_base(at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  CallBuilder b(*this, "all_gather_into_tensor", OpType::_ALLGATHER_BASE);
  b.check(input, "input").check(output, "output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "opencl_gloo all_gather_into_tensor: output is ",
              dtype_name(output.scalar_type()), " but input is ", dtype_name(input.scalar_type()));
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "opencl_gloo all_gather_into_tensor: output has ",
              output.numel(), " elements, but must have the group size (", getSize(), ") times the input's ",
              input.numel());
  auto host_in = b.in(input);
  auto host_out = b.out(output);
  b.agree(describe({input}));
  return b.submit(
      [host_out, host_in, opts](c10d::Backend& g) mutable { return g._allgather_base(host_out, host_in, opts); });
}

WorkPtr StagingBackend::allgather_coalesced(std::vector<TensorList>& outputs, TensorList& inputs,
                                            const c10d::AllgatherOptions& opts) {
  CallBuilder b(*this, "all_gather_coalesced", OpType::ALLGATHER_COALESCED);
  b.check(inputs, "input").check(outputs, "output");
  auto host_in = b.in(inputs);
  std::vector<TensorList> host_out;
  for (auto& o : outputs) host_out.push_back(b.out(o));
  b.agree(describe(inputs));
  return b.submit(
      [host_out, host_in, opts](c10d::Backend& g) mutable { return g.allgather_coalesced(host_out, host_in, opts); });
}

WorkPtr StagingBackend::allgather_into_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                                        const c10d::AllgatherOptions& opts) {
  CallBuilder b(*this, "all_gather_into_tensor_coalesced", OpType::COALESCED);
  b.check(inputs, "input").check(outputs, "output");
  TORCH_CHECK(outputs.size() == inputs.size(), "opencl_gloo all_gather_into_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  auto host_in = b.in(inputs);
  auto host_out = b.out(outputs);
  b.agree(describe(inputs));
  return b.submit([host_out, host_in, opts](c10d::Backend& g) mutable {
    return g.allgather_into_tensor_coalesced(host_out, host_in, opts);
  });
}

WorkPtr StagingBackend::gather(std::vector<TensorList>& outputs, TensorList& inputs, const c10d::GatherOptions& opts) {
  CallBuilder b(*this, "gather", OpType::GATHER);
  b.check(inputs, "input").check(outputs, "output");
  auto host_in = b.in(inputs);
  std::vector<TensorList> host_out;
  for (auto& o : outputs) host_out.push_back(b.out(o));
  b.agree(c10::str("root=", opts.rootRank, " ", describe(inputs)));
  return b.submit([host_out, host_in, opts](c10d::Backend& g) mutable { return g.gather(host_out, host_in, opts); });
}

WorkPtr StagingBackend::scatter(TensorList& outputs, std::vector<TensorList>& inputs, const c10d::ScatterOptions& opts) {
  CallBuilder b(*this, "scatter", OpType::SCATTER);
  b.check(outputs, "output").check(inputs, "input");
  std::vector<TensorList> host_in;
  for (auto& i : inputs) host_in.push_back(b.in(i));
  auto host_out = b.out(outputs);
  b.agree(c10::str("root=", opts.rootRank, " ", describe(outputs)));
  return b.submit([host_out, host_in, opts](c10d::Backend& g) mutable { return g.scatter(host_out, host_in, opts); });
}

WorkPtr StagingBackend::reduce_scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                                       const c10d::ReduceScatterOptions& opts) {
  CallBuilder b(*this, "reduce_scatter", OpType::REDUCE_SCATTER);
  b.check(outputs, "output").check(inputs, "input");
  auto o = opts;
  o.reduceOp = b.reduce_op(opts.reduceOp, outputs);
  std::vector<TensorList> host_in;
  for (auto& i : inputs) host_in.push_back(b.in(i));
  auto host_out = b.out(outputs);
  b.agree(describe(outputs));
  return b.submit([host_out, host_in, o](c10d::Backend& g) mutable { return g.reduce_scatter(host_out, host_in, o); });
}

WorkPtr StagingBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                             const c10d::ReduceScatterOptions& opts) {
  CallBuilder b(*this, "reduce_scatter_tensor", OpType::_REDUCE_SCATTER_BASE);
  b.check(output, "output").check(input, "input");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "opencl_gloo reduce_scatter_tensor: output is ",
              dtype_name(output.scalar_type()), " but input is ", dtype_name(input.scalar_type()));
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "opencl_gloo reduce_scatter_tensor: input has ",
              input.numel(), " elements, but must have the group size (", getSize(), ") times the output's ",
              output.numel());
  auto o = opts;
  o.reduceOp = b.reduce_op(opts.reduceOp, {output});
  auto host_in = b.in(input);
  auto host_out = b.out(output);
  b.agree(describe({output}));
  return b.submit(
      [host_out, host_in, o](c10d::Backend& g) mutable { return g._reduce_scatter_base(host_out, host_in, o); });
}

WorkPtr StagingBackend::reduce_scatter_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                                        const c10d::ReduceScatterOptions& opts) {
#if TORCH_OPENCL_HAS_RS_COALESCED_OPTYPE
  constexpr auto op_type = OpType::REDUCE_SCATTER_TENSOR_COALESCED;
#else
  constexpr auto op_type = OpType::COALESCED;  // torch 2.11 has no OpType of its own for it
#endif
  CallBuilder b(*this, "reduce_scatter_tensor_coalesced", op_type);
  b.check(outputs, "output").check(inputs, "input");
  TORCH_CHECK(outputs.size() == inputs.size(), "opencl_gloo reduce_scatter_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  auto o = opts;
  o.reduceOp = b.reduce_op(opts.reduceOp, outputs);
  auto host_in = b.in(inputs);
  auto host_out = b.out(outputs);
  b.agree(describe(outputs));
  return b.submit([host_out, host_in, o](c10d::Backend& g) mutable {
    return g.reduce_scatter_tensor_coalesced(host_out, host_in, o);
  });
}

WorkPtr StagingBackend::alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
                                      std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  CallBuilder b(*this, "all_to_all_single", OpType::ALLTOALL_BASE);
  b.check(output, "output").check(input, "input");
  const int64_t size = getSize();
  TORCH_CHECK(input.dim() >= 1 && output.dim() >= 1, "opencl_gloo all_to_all_single: input and output need a first dimension to split");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "opencl_gloo all_to_all_single: output is ",
              dtype_name(output.scalar_type()), " but input is ", dtype_name(input.scalar_type()));
  // Rows (slices along dim 0) sent to and expected from each rank.
  auto rows = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    if (!splits.empty()) {
      TORCH_CHECK(static_cast<int64_t>(splits.size()) == size, "opencl_gloo all_to_all_single: ", which,
                  " split sizes have ", splits.size(), " entries, need one per rank (", size, ")");
      int64_t total = 0;
      for (auto s : splits) total += s;
      TORCH_CHECK(total == t.size(0), "opencl_gloo all_to_all_single: ", which, " split sizes add up to ", total,
                  " rows but the ", which, " has ", t.size(0));
      return splits;
    }
    TORCH_CHECK(t.size(0) % size == 0, "opencl_gloo all_to_all_single: the ", which, "'s first dimension (",
                t.size(0), ") must divide evenly by the group size (", size, ") when no split sizes are given");
    return std::vector<int64_t>(size, t.size(0) / size);
  };
  std::vector<int64_t> mine = rows(input, input_split_sizes, "input");
  const auto out_rows = rows(output, output_split_sizes, "output");
  mine.insert(mine.end(), out_rows.begin(), out_rows.end());
  const int64_t row = input.size(0) ? input.numel() / input.size(0) : 0;
  const int64_t out_row = output.size(0) ? output.numel() / output.size(0) : row;
  TORCH_CHECK(row == out_row || input.size(0) == 0 || output.size(0) == 0, "opencl_gloo all_to_all_single: input rows have ",
              row, " elements but output rows ", out_row);
  auto host_in = b.in(input);
  auto host_out = b.out(output);
  b.agree(c10::str(dtype_name(input.scalar_type()), " rows of ", input.numel() / std::max<int64_t>(input.size(0), 1),
                   " elements"));
  b.layout(std::move(mine), exchange_check("all_to_all_single", "rows"));
  return b.submit([host_out, host_in, output_split_sizes, input_split_sizes, opts](c10d::Backend& g) mutable {
    return g.alltoall_base(host_out, host_in, output_split_sizes, input_split_sizes, opts);
  });
}

WorkPtr StagingBackend::alltoall(TensorList& outputs, TensorList& inputs, const c10d::AllToAllOptions& opts) {
  // gloo's list form takes equal sizes only; as NCCL does, any sizes go, through the flat form with splits.
  CallBuilder b(*this, "all_to_all", OpType::ALLTOALL);
  b.check(outputs, "output").check(inputs, "input");
  const auto size = static_cast<size_t>(getSize());
  TORCH_CHECK(inputs.size() == size && outputs.size() == size, "opencl_gloo all_to_all: needs one input and one "
              "output tensor per rank (", size, "), got ", inputs.size(), " inputs and ", outputs.size(), " outputs");
  const auto dtype = inputs[0].scalar_type();
  for (size_t i = 0; i < size; ++i)
    TORCH_CHECK(outputs[i].scalar_type() == dtype && inputs[i].scalar_type() == dtype,
                "opencl_gloo all_to_all: every input and output must have one dtype, got ", dtype_name(dtype),
                " and ", dtype_name(inputs[i].scalar_type()), "/", dtype_name(outputs[i].scalar_type()));
  std::vector<int64_t> in_splits, out_splits;
  for (const auto& t : inputs) in_splits.push_back(t.numel());
  for (const auto& t : outputs) out_splits.push_back(t.numel());
  auto host_in = CallBuilder::pinned({std::accumulate(in_splits.begin(), in_splits.end(), int64_t{0})}, dtype);
  auto host_out = CallBuilder::pinned({std::accumulate(out_splits.begin(), out_splits.end(), int64_t{0})}, dtype);
  for (int64_t i = 0, at = 0; i < static_cast<int64_t>(size); at += in_splits[i], ++i)
    b.in(inputs[i], host_in.narrow(0, at, in_splits[i]).view(inputs[i].sizes()));
  for (int64_t i = 0, at = 0; i < static_cast<int64_t>(size); at += out_splits[i], ++i)
    b.out(outputs[i], host_out.narrow(0, at, out_splits[i]).view(outputs[i].sizes()));
  std::vector<int64_t> mine = in_splits;
  mine.insert(mine.end(), out_splits.begin(), out_splits.end());
  b.agree(dtype_name(dtype));
  b.layout(std::move(mine), exchange_check("all_to_all", "elements"));
  return b.submit([host_out, host_in, out_splits, in_splits, opts](c10d::Backend& g) mutable {
    return g.alltoall_base(host_out, host_in, out_splits, in_splits, opts);
  });
}

// Point-to-point calls send a header first, on a tag of their own (the user's tag with bit 29
// flipped), so that a receiver checks the dtype and size before the data arrives: gloo aborts the
// process when a message is larger than the receiving buffer, and mixes dtypes silently.
namespace {

constexpr int kHeaderTagBit = 1 << 29;
constexpr int64_t kHeaderMagic = 0x6f636c70327021;  // "ocl p2p!"

at::Tensor p2p_header(const at::Tensor& t) {
  return at::tensor({kHeaderMagic, static_cast<int64_t>(t.scalar_type()), t.numel()}, at::kLong);
}

std::string header_text(const at::Tensor& header) {
  const int64_t* h = header.const_data_ptr<int64_t>();
  if (h[0] != kHeaderMagic) return "something other than an opencl_gloo send";
  return c10::str(dtype_name(static_cast<at::ScalarType>(h[1])), " x ", h[2]);
}

void check_single(const TensorList& tensors, const char* name) {
  TORCH_CHECK(tensors.size() == 1, "opencl_gloo ", name, ": takes one tensor, got ", tensors.size());
}

}  // namespace

WorkPtr StagingBackend::send(TensorList& tensors, int dst_rank, int tag) {
  CallBuilder b(*this, "send", OpType::SEND);
  check_single(tensors, "send");
  b.check(tensors, "tensor").point_to_point();
  auto host = b.in(tensors);
  std::vector<at::Tensor> header{p2p_header(tensors[0])};
  auto header_work = std::make_shared<WorkPtr>();  // kept with the call; completes before the data's
  return b.submit([host, header, header_work, dst_rank, tag](c10d::Backend& g) mutable {
    *header_work = g.send(header, dst_rank, tag ^ kHeaderTagBit);
    return g.send(host, dst_rank, tag);
  });
}

// The header's work finished: checks it, then receives the data from its sender (a mismatched
// message is received into scratch memory first, so that later messages stay in step).
static WorkPtr receive_data(c10d::Backend& g, c10d::Work& header_work, const at::Tensor& header,
                            TensorList host, const at::Tensor& expected, int src_rank, int tag) {
  const int source = src_rank >= 0 ? src_rank : header_work.sourceRank();
  const int64_t* h = header.const_data_ptr<int64_t>();
  if (h[0] == kHeaderMagic && h[1] == static_cast<int64_t>(expected.scalar_type()) && h[2] == expected.numel())
    return g.recv(host, source, tag);
  if (h[0] == kHeaderMagic) {
    std::vector<at::Tensor> scratch{
        at::empty({h[2]}, at::TensorOptions().dtype(static_cast<at::ScalarType>(h[1])))};
    g.recv(scratch, source, tag)->wait();
  }
  TORCH_CHECK(false, "opencl_gloo recv: rank ", source, " sent ", header_text(header), " (tag ", tag,
              "), but this recv's tensor is ", dtype_name(expected.scalar_type()), " x ", expected.numel(),
              ": a recv needs a tensor of the sent dtype and number of elements");
}

WorkPtr StagingBackend::recv(TensorList& tensors, int src_rank, int tag) {
  CallBuilder b(*this, "recv", OpType::RECV);
  check_single(tensors, "recv");
  b.check(tensors, "tensor").point_to_point();
  auto host = b.out(tensors);
  std::vector<at::Tensor> header{at::zeros({3}, at::kLong)};
  b.then([host, header, expected = host[0], src_rank, gloo = gloo_, tag](c10d::Work& header_work) {
    return receive_data(*gloo, header_work, header[0], host, expected, src_rank, tag);
  });
  return b.submit([header, src_rank, tag](c10d::Backend& g) mutable {
    return g.recv(header, src_rank, tag ^ kHeaderTagBit);
  });
}

WorkPtr StagingBackend::recvAnysource(TensorList& tensors, int tag) {
  CallBuilder b(*this, "recv", OpType::RECVANYSOURCE);
  check_single(tensors, "recv");
  b.check(tensors, "tensor").point_to_point();
  auto host = b.out(tensors);
  b.any_source();
  std::vector<at::Tensor> header{at::zeros({3}, at::kLong)};
  b.then([host, header, expected = host[0], gloo = gloo_, tag](c10d::Work& header_work) {
    return receive_data(*gloo, header_work, header[0], host, expected, -1, tag);
  });
  return b.submit([header, tag](c10d::Backend& g) mutable { return g.recvAnysource(header, tag ^ kHeaderTagBit); });
}

WorkPtr StagingBackend::barrier(const c10d::BarrierOptions& opts) {
  CallBuilder b(*this, "barrier", OpType::BARRIER);
  c10d::BarrierOptions o;  // gloo's barrier has no device
  o.timeout = opts.timeout;
  b.agree("");
  return b.submit([o](c10d::Backend& g) { return g.barrier(o); });
}

}  // namespace torch_opencl::distributed
