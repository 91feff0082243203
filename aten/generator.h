#pragma once
// The opencl random number generator: a seed and a Philox counter offset, as
// CUDA's generator keeps. Its state is 16 bytes: seed, then offset.
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_opencl {

class OpenCLGeneratorImpl : public c10::GeneratorImpl {
 public:
  explicit OpenCLGeneratorImpl(c10::DeviceIndex device = -1);
  ~OpenCLGeneratorImpl() override = default;

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;  // draws a non-deterministic seed and sets it
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // Reserves `increment` counter values and returns the offset to start from.
  uint64_t advance(uint64_t increment);

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  OpenCLGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex device);

}  // namespace torch_opencl
