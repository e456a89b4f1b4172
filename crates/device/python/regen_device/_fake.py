"""Fake (shape-only) kernels of the device's own ops (regen.toml's [[custom_op]]), for
torch.compile, FakeTensor and torch.library.opcheck. regen generates the library definition, the
Rust kernels' registrations and the autograd node, but cannot know an op's output shapes: a
backend writes these by hand. The package's __init__ imports this module when it exists."""

import torch

# The same contract under three names: `torch.library.register_fake` (2.4 on),
# `torch.library.impl_abstract` (2.2-2.3) and `torch._custom_ops.impl_abstract` (2.1).
if hasattr(torch.library, "register_fake"):
    _register_fake = torch.library.register_fake
elif hasattr(torch.library, "impl_abstract"):
    _register_fake = torch.library.impl_abstract
else:
    import torch._custom_ops

    _register_fake = torch._custom_ops.impl_abstract


def _with_size(t, dim, size):
    shape = list(t.shape)
    shape[dim % t.dim()] = size
    return shape


@_register_fake("regen::scatter_sum")
def _scatter_sum(src, index, dim, dim_size):
    return src.new_empty(_with_size(src, dim, dim_size))


@_register_fake("regen::scatter_sum_backward")
def _scatter_sum_backward(grad, index, dim):
    if index.dim() == 1 and grad.dim() > 1:
        return grad.new_empty(_with_size(grad, dim, index.shape[0]))
    return grad.new_empty(index.shape)


@_register_fake("regen::scatter_max")
def _scatter_max(src, index, dim, dim_size):
    shape = _with_size(src, dim, dim_size)
    return src.new_empty(shape), src.new_empty(shape, dtype=torch.int64)


@_register_fake("regen::scatter_max_backward")
def _scatter_max_backward(grad_out, src, argmax, dim):
    return grad_out.new_empty(src.shape)
