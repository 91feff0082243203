#include "aten/generator.h"

#include <ATen/Utils.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "runtime/device.h"

namespace torch_opencl {

OpenCLGeneratorImpl::OpenCLGeneratorImpl(c10::DeviceIndex device)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(c10::default_rng_seed_val) {}

void OpenCLGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t OpenCLGeneratorImpl::current_seed() const { return seed_; }

uint64_t OpenCLGeneratorImpl::seed() {
  const auto random = c10::detail::getNonDeterministicRandom(true);
  set_current_seed(random);
  return random;
}

void OpenCLGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }

uint64_t OpenCLGeneratorImpl::get_offset() const { return offset_; }

void OpenCLGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.numel() == 16,
              "An opencl generator state is a uint8 tensor of 16 bytes (seed, offset); got ",
              new_state.numel(), " elements of ", new_state.dtype());
  TORCH_CHECK(new_state.device().is_cpu(), "The generator state must be a CPU tensor");
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed_, bytes, 8);
  std::memcpy(&offset_, bytes + 8, 8);
}

c10::intrusive_ptr<c10::TensorImpl> OpenCLGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({16}, at::kByte, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, 8);
  std::memcpy(bytes + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

uint64_t OpenCLGeneratorImpl::advance(uint64_t increment) {
  const uint64_t start = offset_;
  offset_ += increment;
  return start;
}

OpenCLGeneratorImpl* OpenCLGeneratorImpl::clone_impl() const {
  auto* copy = new OpenCLGeneratorImpl(device().index());
  copy->seed_ = seed_;
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag once;
  static std::vector<at::Generator> generators;
  std::call_once(once, [] {
    for (int i = 0; i < tocl::device_count(); ++i)
      generators.push_back(at::make_generator<OpenCLGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
  });
  const int index = device < 0 ? 0 : device;
  TORCH_CHECK(index < static_cast<int>(generators.size()), "opencl:", index, " does not exist: ",
              generators.size(), " device(s) are available");
  return generators[index];
}

}  // namespace torch_opencl
