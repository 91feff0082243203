#include "aten/distributed/comm_queue.h"

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstdlib>
#include <cstring>

#include "runtime/stream.h"

namespace torch_opencl::distributed {
namespace {

constexpr auto kOpenCL = c10::DeviceType::PrivateUse1;
// A call's description travels as a fixed-size record, so that ranks disagreeing even on the kind of
// call exchange records of one size: a 64-bit hash of the whole text, then as much of the text as fits.
constexpr int64_t kRecordBytes = 256;
constexpr int64_t kTextBytes = kRecordBytes - 8;

bool checks_enabled() {
  const char* v = std::getenv("TORCH_OPENCL_DIST_CHECK");
  if (!v || !*v) return true;
  const std::string s(v);
  TORCH_CHECK(s == "0" || s == "1", "TORCH_OPENCL_DIST_CHECK must be 0 or 1, got '", s, "'");
  return s == "1";
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<int64_t> record_of(const std::string& signature) {
  std::vector<int64_t> record(kRecordBytes / 8, 0);
  const uint64_t hash = fnv1a(signature);
  std::memcpy(record.data(), &hash, 8);
  std::memcpy(reinterpret_cast<char*>(record.data()) + 8, signature.data(),
              std::min<size_t>(signature.size(), kTextBytes - 1));
  return record;
}

std::string text_of(const std::vector<int64_t>& record) {
  const char* text = reinterpret_cast<const char*>(record.data()) + 8;
  return std::string(text, strnlen(text, kTextBytes));
}

}  // namespace

CommQueue::CommQueue(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout)
    : gloo_(std::move(gloo)), rank_(rank), size_(size), timeout_ms_(timeout.count()), check_calls_(checks_enabled()) {
  start_thread_ = std::thread([this] { start_loop(); });
  for (int lane = 0; lane < kLanes; ++lane) complete_threads_[lane] = std::thread([this, lane] { complete_loop(lane); });
}

CommQueue::~CommQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  start_thread_.join();
  for (auto& t : complete_threads_) t.join();
}

void CommQueue::set_timeout(std::chrono::milliseconds timeout) {
  timeout_ms_ = timeout.count();
}

int CommQueue::stream_for(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = streams_.find(device);
  if (it == streams_.end()) it = streams_.emplace(device, tocl::stream_from_pool(device)).first;
  return it->second;
}

void CommQueue::wait_for_writes(StagedCall& call) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] {
    for (const auto* list : {&call.inputs, &call.results})
      for (const auto& [device_tensor, host] : *list)
        if (pending_writes_.count(device_tensor.storage().unsafeGetStorageImpl())) return false;
    return true;
  });
  for (const auto& [device_tensor, host] : call.results)
    pending_writes_.insert(device_tensor.storage().unsafeGetStorageImpl());
  call.writes_pending = true;
}

void CommQueue::written(StagedCall& call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!call.writes_pending) return;
    call.writes_pending = false;
    for (const auto& [device_tensor, host] : call.results)
      pending_writes_.erase(pending_writes_.find(device_tensor.storage().unsafeGetStorageImpl()));
  }
  cv_.notify_all();
}

namespace {
c10::Stream stream_object(int device, int stream_id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kOpenCL, static_cast<c10::DeviceIndex>(device)),
                     static_cast<c10::StreamId>(stream_id));
}
}  // namespace

void CommQueue::stage_inputs(StagedCall& call) {
  if (call.device < 0) return;
  const int stream_id = stream_for(call.device);
  const c10::Stream stream = stream_object(call.device, stream_id);
  c10::StreamGuard guard(stream);
  // After what the caller's stream did before the call: its inputs, and earlier uses of the outputs' memory.
  call.called.wait(call.device, stream_id);
  if (call.inputs.empty()) return;
  const c10::impl::VirtualGuardImpl impl(kOpenCL);
  for (auto& [device_tensor, host] : call.inputs) {
    host.copy_(device_tensor, /*non_blocking=*/true);
    impl.recordDataPtrOnStream(device_tensor.storage().data_ptr(), stream);
  }
  tocl::Event copied;
  copied.record(call.device, stream_id);
  copied.synchronize();
}

void CommQueue::submit(std::unique_ptr<StagedCall> call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    to_start_.push_back(std::move(call));
  }
  cv_.notify_all();
}

std::vector<std::vector<int64_t>> CommQueue::exchange(const std::vector<int64_t>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  at::Tensor local = at::empty({n}, at::kLong);
  std::memcpy(local.data_ptr<int64_t>(), mine.data(), n * sizeof(int64_t));
  at::Tensor all = at::empty({size_ * n}, at::kLong);
  c10d::AllgatherOptions opts;
  opts.timeout = timeout();
  gloo_->_allgather_base(all, local, opts)->wait(timeout());
  std::vector<std::vector<int64_t>> per_rank(size_);
  const int64_t* p = all.const_data_ptr<int64_t>();
  for (int r = 0; r < size_; ++r) per_rank[r].assign(p + r * n, p + (r + 1) * n);
  return per_rank;
}

void CommQueue::check_agreement(const StagedCall& call) {
  const auto mine = record_of(call.signature);
  const auto all = exchange(mine);
  bool same = true;
  for (const auto& r : all) same = same && r == mine;
  if (!same) {
    std::string calls;
    for (int r = 0; r < size_; ++r) calls += c10::str(r ? "; " : "", "rank ", r, ": ", text_of(all[r]));
    std::rethrow_exception(dist_error(c10::str(
        "opencl_gloo: the ranks did not make the same collective call (", calls,
        "). Every rank must call the same collectives in the same order, with the same reduce op and root "
        "and tensors of the same dtypes and numbers of elements.")));
  }
  if (call.check_layout) {
    const std::string problem = call.check_layout(exchange(call.layout));
    if (!problem.empty()) std::rethrow_exception(dist_error("opencl_gloo: " + problem));
  }
}

void CommQueue::start_loop() {
  for (;;) {
    std::unique_ptr<StagedCall> call;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !to_start_.empty(); });
      if (to_start_.empty()) break;
      call = std::move(to_start_.front());
      to_start_.pop_front();
    }
    Started started;
    wait_for_writes(*call);
    try {
      stage_inputs(*call);
      if (check_calls_ && !call->signature.empty()) check_agreement(*call);
      started.gloo_work = call->start();
    } catch (...) {
      started.error = std::current_exception();
    }
    started.call = std::move(call);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const int lane = !started.call->point_to_point ? kCollectives : started.call->then ? kReceives : kSends;
      to_complete_[lane].push_back(std::move(started));
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& lane : to_complete_) lane.push_back(Started{});  // no call: the end
  }
  cv_.notify_all();
}

void CommQueue::complete_loop(int lane) {
  for (;;) {
    Started started;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this, lane] { return !to_complete_[lane].empty(); });
      started = std::move(to_complete_[lane].front());
      to_complete_[lane].pop_front();
    }
    if (!started.call) break;
    finish(started);
  }
}

void CommQueue::finish(Started& started) {
  StagedCall& call = *started.call;
  std::exception_ptr error = started.error;
  if (!error) {
    try {
      started.gloo_work->wait(timeout());
      const int source = call.any_source ? started.gloo_work->sourceRank() : -1;
      if (call.then) call.then(*started.gloo_work)->wait(timeout());
      for (auto& host : call.average) host.div_(size_);
      if (call.device >= 0) {
        const int stream_id = stream_for(call.device);
        const c10::Stream stream = stream_object(call.device, stream_id);
        c10::StreamGuard guard(stream);  // which already waited for the caller's stream (stage_inputs)
        const c10::impl::VirtualGuardImpl impl(kOpenCL);
        for (auto& [device_tensor, host] : call.results) {
          device_tensor.copy_(host, /*non_blocking=*/true);
          // Freed before this copy finished, the block is not reused.
          impl.recordDataPtrOnStream(device_tensor.storage().data_ptr(), stream);
        }
        written(call);
        call.work->complete(source);  // records the Future's event on this stream
      } else {
        call.work->complete(source);
      }
      return;
    } catch (...) {
      error = std::current_exception();
    }
  }
  written(call);
  std::string text = error_text(error);
  if (text.rfind("opencl_gloo", 0) != 0)
    text = c10::str("opencl_gloo: ", call.work->what(), " failed on rank ", rank_, ": ", text);
  call.work->fail(dist_error(text));
}

}  // namespace torch_opencl::distributed
