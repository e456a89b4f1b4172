// The random generator of a regen backend (see glue.h): torch.Generator(device=...), the
// default generator, and the engine service kernels reach it through.
#include "glue.h"

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>

#if !REGEN_TORCH_AT_LEAST(2, 6)
// torch.Generator(device=...) asks REGISTER_GENERATOR_PRIVATEUSE1's function until 2.5, the hooks'
// getNewGenerator from 2.6 (which deprecates the macro).
#include <ATen/core/GeneratorForPrivateuseone.h>
#endif

#include <cstdint>
#include <vector>

namespace regen_host_glue {
namespace {

// The device's random generator: PyTorch's CPU generator ported to Rust (regen_runtime::rng), so
// a seed gives the same numbers as on CPU and states are torch.get_rng_state()'s bytes. The
// engine is Rust's; this class is what torch sees (torch.Generator(device=...), the default
// generator, get/set_state, clone). Kernels reach the engine through the generator_engine service
// and lock it themselves, as ATen's kernels lock mutex_; torch locks mutex_ around these methods.
// The pure virtuals of c10::GeneratorImpl are the same from 2.1 to 2.15.
struct DeviceGenerator final : c10::GeneratorImpl {
  // Takes ownership of `engine` (a default engine is never freed by Rust).
  DeviceGenerator(c10::DeviceIndex index, void* engine)
      : c10::GeneratorImpl{device_at(index), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)}, engine_(engine) {
    TORCH_CHECK(engine_ != nullptr, REGEN_DEVICE_NAME ": no random engine");
  }
  ~DeviceGenerator() override { regen_runtime_rng_free(engine_); }
  DeviceGenerator(const DeviceGenerator&) = delete;
  DeviceGenerator& operator=(const DeviceGenerator&) = delete;

  void set_current_seed(uint64_t seed) override { regen_runtime_rng_set_seed(engine_, seed); }
  // As CPU's generator: mt19937 has no offset.
  void set_offset(uint64_t) override { TORCH_CHECK(false, REGEN_DEVICE_NAME " Generator does not use offset"); }
  uint64_t get_offset() const override { TORCH_CHECK(false, REGEN_DEVICE_NAME " Generator does not use offset"); }
  uint64_t current_seed() const override { return regen_runtime_rng_current_seed(engine_); }
  uint64_t seed() override {
    uint64_t random = c10::detail::getNonDeterministicRandom();
    set_current_seed(random);
    return random;
  }
  void set_state(const c10::TensorImpl& new_state) override {
    at::detail::check_rng_state(new_state);
    const char* error = regen_runtime_rng_set_state(engine_, static_cast<const uint8_t*>(new_state.data()),
                                                    static_cast<size_t>(new_state.numel()));
    TORCH_CHECK(error == nullptr, error);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    size_t size = regen_runtime_rng_state_size();
    at::Tensor state = at::empty({static_cast<int64_t>(size)}, at::TensorOptions().dtype(at::kByte));
    regen_runtime_rng_get_state(engine_, state.data_ptr<uint8_t>(), size);
    return state.getIntrusivePtr();
  }
  void* engine() const { return engine_; }

 private:
  DeviceGenerator* clone_impl() const override {
    return new DeviceGenerator(device().index(), regen_runtime_rng_clone(engine_));
  }
  void* engine_;
};

}  // namespace

// Each device's default generator, made once (its engine is Rust's default engine of that device).
const at::Generator& default_generator(c10::DeviceIndex index) {
  static const std::vector<at::Generator> generators = [] {
    std::vector<at::Generator> all;
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      all.push_back(at::make_generator<DeviceGenerator>(i, regen_runtime_rng_default(i)));
    }
    return all;
  }();
  return generators.at(static_cast<size_t>(index));
}

at::Generator new_generator(c10::DeviceIndex index) {
  return at::make_generator<DeviceGenerator>(index, regen_runtime_rng_new(c10::default_rng_seed_val));
}

const char* host_generator_engine(void* generator_impl, void** engine) {
  return guarded([&] {
    auto* gen = static_cast<c10::GeneratorImpl*>(generator_impl);
    // ATen's check_generator, word for word.
    TORCH_CHECK(gen->device().type() == kDevice, "Expected a '", kDevice, "' device type for generator but found '",
                gen->device().type(), "'");
    auto* device_gen = dynamic_cast<DeviceGenerator*>(gen);
    TORCH_CHECK(device_gen != nullptr, REGEN_DEVICE_NAME ": a generator of another PrivateUse1 backend");
    *engine = device_gen->engine();
  });
}

#if !REGEN_TORCH_AT_LEAST(2, 6)
namespace {

at::Generator make_generator_for_device(c10::DeviceIndex index) {
  return new_generator(check_device_index(index));
}

}  // namespace
#endif

}  // namespace regen_host_glue

#if !REGEN_TORCH_AT_LEAST(2, 6)
// The macro pastes its argument into a variable name: an unqualified name.
static at::Generator regen_make_generator(c10::DeviceIndex i) { return regen_host_glue::make_generator_for_device(i); }
REGISTER_GENERATOR_PRIVATEUSE1(regen_make_generator)
#endif
