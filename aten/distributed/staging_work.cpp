#include "aten/distributed/staging_work.h"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

namespace torch_opencl::distributed {

std::exception_ptr dist_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

StagingWork::StagingWork(int rank, c10d::OpType op, std::string what, std::vector<at::Tensor> outputs,
                         std::optional<c10::Device> device, std::chrono::milliseconds timeout)
    : c10d::Work(rank, op),
      what_(std::move(what)),
      outputs_(std::move(outputs)),
      future_(device ? c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                                std::vector<c10::Device>{*device})
                     : c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors())),
      timeout_(timeout) {}

bool StagingWork::wait(std::chrono::milliseconds timeout) {
  const auto limit = timeout == kNoTimeout ? timeout_ : timeout;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, limit, [this] { return completed_; })) {
      lock.unlock();
      std::rethrow_exception(dist_error(c10::str(
          "opencl_gloo: ", what_, " on rank ", rank_, " did not finish within ", limit.count(),
          " ms (the process group's timeout): another rank may have died, hung, or not called this collective")));
    }
    if (exception_) std::rethrow_exception(exception_);
  }
  synchronize();
  return true;
}

void StagingWork::synchronize() {
  // Complete by now: makes the current streams wait for the copies back (no host wait).
  if (future_->completed() && !future_->hasError()) future_->wait();
}

int StagingWork::sourceRank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return source_rank_;
}

void StagingWork::complete(int source_rank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source_rank_ = source_rank;
  }
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

void StagingWork::fail(const std::exception_ptr& error) {
  future_->setError(error);
  finish(error);
}

CoalescedWork::CoalescedWork(int rank, std::vector<c10::intrusive_ptr<StagingWork>> works)
    : c10d::Work(rank, c10d::OpType::COALESCED), works_(std::move(works)) {}

bool CoalescedWork::isCompleted() {
  for (auto& w : works_)
    if (!w->isCompleted()) return false;
  return true;
}

bool CoalescedWork::isSuccess() const {
  for (auto& w : works_)
    if (!w->isSuccess()) return false;
  return true;
}

std::exception_ptr CoalescedWork::exception() const {
  for (auto& w : works_)
    if (auto e = w->exception()) return e;
  return nullptr;
}

bool CoalescedWork::wait(std::chrono::milliseconds timeout) {
  std::exception_ptr first;
  for (auto& w : works_) {
    try {
      w->wait(timeout);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return true;
}

void CoalescedWork::synchronize() {
  for (auto& w : works_) w->synchronize();
}

std::vector<at::Tensor> CoalescedWork::result() {
  std::vector<at::Tensor> all;
  for (auto& w : works_)
    for (auto& t : w->result()) all.push_back(t);
  return all;
}

c10::intrusive_ptr<c10::ivalue::Future> CoalescedWork::getFuture() {
  TORCH_CHECK(false, "opencl_gloo: the Work of a coalesced group of calls has no Future; wait() for it, or use "
              "the Futures of the single calls");
}

}  // namespace torch_opencl::distributed
