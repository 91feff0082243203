#pragma once
// The order in which an opencl_gloo backend hands calls to gloo, and how their data moves.
//
// Every rank must start gloo's operations in the same order, so one thread per backend starts them,
// in the order the calls were made. For each call it enqueues the device-to-host copies on the
// backend's stream for the device (after the work the caller's stream had when the call was made),
// waits for them on the host, checks that every rank made the same call (below), and starts gloo's
// operation on the host buffers. Three more threads, one each for collectives, sends and receives,
// wait for the operations to finish, in the order they were started, and enqueue the copies back onto
// the device on the same stream, so a caller only blocks where it waits for a Work. (With one such
// thread, a send waiting for its peer's receive could hold up the receive the peer's send waits for.)
// A call that reads or writes a tensor an earlier call has yet to write back starts after that
// write-back is enqueued, so calls on one tensor see each other's results in order, as NCCL's do.
//
// The check: before a collective, the ranks exchange a short description of it (its name, reduce op,
// root, dtypes and element counts: what gloo needs to agree on). gloo itself aborts the process on
// mismatched sizes and silently mixes mismatched dtypes; with the check, every rank raises the same
// clear error instead, and the group stays usable. TORCH_OPENCL_DIST_CHECK=0 turns it off.
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aten/distributed/staging_work.h"
#include "runtime/event.h"

namespace torch_opencl::distributed {

struct StagedCall {
  std::string signature;  // what every rank must pass alike; empty for point-to-point calls
  // Per-rank figures whose relation between ranks `check_layout` verifies (all_to_all's splits).
  std::vector<int64_t> layout;
  std::function<std::string(const std::vector<std::vector<int64_t>>&)> check_layout;
  std::function<c10::intrusive_ptr<c10d::Work>()> start;  // gloo's operation on the host buffers
  std::vector<std::pair<at::Tensor, at::Tensor>> inputs;   // (device tensor, host buffer): copied in at the start
  std::vector<std::pair<at::Tensor, at::Tensor>> results;  // (device tensor, host buffer): copied back at the end
  std::vector<at::Tensor> average;                        // host buffers divided by the group size (AVG)
  int device = -1;                                        // -1: no tensors (barrier)
  tocl::Event called;       // the caller's stream when the call was made
  // A receive's second step: given gloo's finished first operation (the sender's header), starts the
  // data's; it may throw instead (the header does not match).
  std::function<c10::intrusive_ptr<c10d::Work>(c10d::Work& header)> then;
  bool any_source = false;  // recv from any rank: the Work reports the sender
  bool point_to_point = false;
  bool writes_pending = false;  // its results are in CommQueue::pending_writes_
  c10::intrusive_ptr<StagingWork> work;
};

class CommQueue {
 public:
  CommQueue(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout);
  ~CommQueue();  // finishes the calls already made, then stops both threads

  void submit(std::unique_ptr<StagedCall> call);
  void set_timeout(std::chrono::milliseconds timeout);

 private:
  struct Started {
    std::unique_ptr<StagedCall> call;
    c10::intrusive_ptr<c10d::Work> gloo_work;
    std::exception_ptr error;
  };

  void start_loop();
  // Which completing thread waits for a call (see above).
  enum Lane { kCollectives, kSends, kReceives, kLanes };
  void complete_loop(int lane);
  void check_agreement(const StagedCall& call);
  void stage_inputs(StagedCall& call);
  void finish(Started& started);
  int stream_for(int device);  // the backend's stream on a device, for the copies both ways
  void wait_for_writes(StagedCall& call);
  void written(StagedCall& call);
  std::vector<std::vector<int64_t>> exchange(const std::vector<int64_t>& mine);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  const int rank_;
  const int size_;
  std::atomic<int64_t> timeout_ms_;  // set_timeout may come from another thread
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeout_ms_.load()); }
  const bool check_calls_;
  std::map<int, int> streams_;  // device -> stream id
  // Storages that started calls will still write back into (NCCL's order for calls on one tensor).
  std::multiset<const c10::StorageImpl*> pending_writes_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<StagedCall>> to_start_;
  std::deque<Started> to_complete_[kLanes];
  bool stopping_ = false;
  std::thread start_thread_;
  std::thread complete_threads_[kLanes];
};

}  // namespace torch_opencl::distributed
