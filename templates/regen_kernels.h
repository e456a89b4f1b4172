/* {{ generated_note }}
 *
 * The Rust kernel entry points the C++ wrappers call, one per generated op.
 * Each returns NULL on success or an error (see regen_abi.h).
 */
#ifndef REGEN_KERNELS_H
#define REGEN_KERNELS_H

#include "regen_abi.h"

#ifdef __cplusplus
extern "C" {
#endif
{% for k in kernels %}
/* {{ k.schema }} */
regen_error* {{ k.symbol }}({{ k.params }});
{% endfor %}
#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* REGEN_KERNELS_H */
