// What runs when `torch.ops.load_library` loads a regen backend (see glue.h): the PrivateUse1
// hooks are registered, and the services are handed to Rust (regen_backend_init), which installs
// its kernels. The allocator, guard and generator register themselves in their own units; none of
// them is used before Python calls into the backend, so the units' order does not matter.
#include "glue.h"

namespace regen_host_glue {
namespace {

struct Init {
  Init() {
    register_hooks();
    regen_backend_init(services());
  }
};

Init init;

}  // namespace
}  // namespace regen_host_glue
