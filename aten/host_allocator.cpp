#include "aten/host_allocator.h"

#include "runtime/host_allocator.h"

namespace torch_opencl {
namespace {

void free_pinned(void* ptr) { tocl::host_free(ptr); }

class PinnedHostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = tocl::host_alloc(nbytes);
    return {ptr, ptr, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
};

}  // namespace

c10::Allocator* host_allocator() {
  static PinnedHostAllocator instance;
  return &instance;
}

}  // namespace torch_opencl
