#pragma once
// opencl_gloo: torch.distributed's backend for opencl tensors. Each call checks its tensors, gives
// each one gloo reads or writes a pinned host buffer, marks the caller's current stream, and hands the
// call to a CommQueue, which copies the inputs to the host after that mark, runs gloo's operation on
// the buffers (a ProcessGroupGloo of its own) and copies the results back. Python registers it for
// the opencl device type (torch_opencl/distributed.py).
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "aten/distributed/comm_queue.h"

namespace torch_opencl::distributed {

class StagingBackend : public c10d::Backend {
 public:
  // `gloo` is a ProcessGroupGloo of the same ranks on a store prefix of its own.
  StagingBackend(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout);
  ~StagingBackend() override;

  const std::string getBackendName() const override { return "opencl_gloo"; }
  bool supportsCoalescing() const override { return true; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<Options> getBackendOptions() override {
    return c10::make_intrusive<Options>(getBackendName(), timeout());
  }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  friend class CallBuilder;
  c10::intrusive_ptr<c10d::Work> submit(std::unique_ptr<StagedCall> call);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeout_ms_.load()); }
  std::atomic<int64_t> timeout_ms_;  // setTimeout may come from another thread
  std::unique_ptr<CommQueue> queue_;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<StagingWork>> coalesced_;
};

}  // namespace torch_opencl::distributed
