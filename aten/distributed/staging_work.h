#pragma once
// The Work (and Future) that an opencl_gloo collective returns. Like gloo's own Work for CUDA
// tensors: wait() blocks the host until the transfer between processes is done, then makes the
// caller's current stream wait for the copies back onto the device, which run on a stream of their
// own; the Future does the same for callbacks and DDP's comm hooks.
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace torch_opencl::distributed {

class StagingWork : public c10d::Work {
 public:
  // `outputs` are the device tensors the collective writes (the Future's value); `device` is
  // theirs, none for a barrier. `timeout` bounds wait() when it is given none.
  StagingWork(int rank, c10d::OpType op, std::string what, std::vector<at::Tensor> outputs,
              std::optional<c10::Device> device, std::chrono::milliseconds timeout);

  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  int sourceRank() const override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // From the completion thread, once the copies back are enqueued on its current stream.
  void complete(int source_rank = -1);
  void fail(const std::exception_ptr& error);

  const std::string& what() const { return what_; }

 private:
  std::string what_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::chrono::milliseconds timeout_;
  int source_rank_ = -1;
};

// Several Works as one (endCoalescing, batch_isend_irecv): waits for each, raises the first error.
class CoalescedWork : public c10d::Work {
 public:
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<StagingWork>> works);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<c10::intrusive_ptr<StagingWork>> works_;
};

// A DistBackendError (torch.distributed.DistBackendError in Python) as an exception_ptr.
std::exception_ptr dist_error(const std::string& message);
// The message of any exception, without C++ backtraces.
std::string error_text(const std::exception_ptr& error);

}  // namespace torch_opencl::distributed
