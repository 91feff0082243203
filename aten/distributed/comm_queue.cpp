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
    : gloo_(std::move(gloo)), rank_(rank), size_(size), timeout_(timeout), check_calls_(checks_enabled()) {
  start_thread_ = std::thread([this] { start_loop(); });
  complete_thread_ = std::thread([this] { complete_loop(); });
}

CommQueue::~CommQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  start_thread_.join();
  complete_thread_.join();
}

void CommQueue::set_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_ = timeout;
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
  opts.timeout = timeout_;
  gloo_->_allgather_base(all, local, opts)->wait(timeout_);
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
    try {
      call->staged.synchronize();
      if (check_calls_ && !call->signature.empty()) check_agreement(*call);
      started.gloo_work = call->start();
    } catch (...) {
      started.error = std::current_exception();
    }
    started.call = std::move(call);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      to_complete_.push_back(std::move(started));
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    to_complete_.push_back(Started{});  // no call: the end
  }
  cv_.notify_all();
}

void CommQueue::complete_loop() {
  for (;;) {
    Started started;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return !to_complete_.empty(); });
      started = std::move(to_complete_.front());
      to_complete_.pop_front();
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
      started.gloo_work->wait(timeout_);
      const int source = call.any_source ? started.gloo_work->sourceRank() : -1;
      for (auto& host : call.average) host.div_(size_);
      if (call.device >= 0) {
        auto it = result_streams_.find(call.device);
        if (it == result_streams_.end())
          it = result_streams_.emplace(call.device, tocl::stream_from_pool(call.device)).first;
        const int stream_id = it->second;
        const c10::Stream stream(c10::Stream::UNSAFE, c10::Device(kOpenCL, static_cast<c10::DeviceIndex>(call.device)),
                                 static_cast<c10::StreamId>(stream_id));
        c10::StreamGuard guard(stream);
        // The outputs' memory may have been in use on the caller's stream until the call.
        call.staged.wait(call.device, stream_id);
        const c10::impl::VirtualGuardImpl impl(kOpenCL);
        for (auto& [device_tensor, host] : call.results) {
          device_tensor.copy_(host, /*non_blocking=*/true);
          // Freed before this copy finished, the block is not reused.
          impl.recordDataPtrOnStream(device_tensor.storage().data_ptr(), stream);
        }
        call.work->complete(source);  // records the Future's event on this stream
      } else {
        call.work->complete(source);
      }
      return;
    } catch (...) {
      error = std::current_exception();
    }
  }
  std::string text = error_text(error);
  if (text.rfind("opencl_gloo", 0) != 0)
    text = c10::str("opencl_gloo: ", call.work->what(), " failed on rank ", rank_, ": ", text);
  call.work->fail(dist_error(text));
}

}  // namespace torch_opencl::distributed
