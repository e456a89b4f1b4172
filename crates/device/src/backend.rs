//! The "regen" device's native kernels: the generated `Kernels` trait implemented on host memory.
//!
//! The bootstrap ops come from regen-runtime's defaults, the copies from the engine; elementwise
//! ops are the rows of the op tables in [`crate::kernels`], reductions and scans structs of its
//! engines, matrix products rows of `kernels::matmul`.
//! The generated entry points count every call, so tests can tell a native kernel from the CPU
//! fallback.

use regen_runtime::{Error, Result, Scalar, ScalarType, Tensor, TensorRef};

use crate::generated::Kernels;
use crate::kernels::dtype::Num;
use crate::kernels::iter::{self, Input};
use crate::kernels::pointwise::{self, ops as pw};
use crate::kernels::{binary, copy, unary};

pub struct Backend;

impl Kernels for Backend {
    // Views, allocation and fill_ from regen-runtime; the copies through the engine below.
    regen_runtime::host_memory_bootstrap!(own_copies);

    fn copy_inplace(&self, self_: TensorRef<'_>, src: TensorRef<'_>, _non_blocking: bool) -> Result<()> {
        copy::copy_(self_, src)
    }

    fn _copy_from(&self, self_: TensorRef<'_>, dst: TensorRef<'_>, _non_blocking: bool) -> Result<Tensor> {
        copy::copy_from(self_, dst)
    }

    fn _copy_from_and_resize(&self, self_: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
        copy::copy_from_and_resize(self_, dst)
    }

    fn record_stream(&self, _self_: TensorRef<'_>, s: regen_runtime::Stream) -> Result<()> {
        // A stream of this device (PrivateUse1, 20) only: CUDA's kernel rejects other devices' too.
        if s.device.device_type != 20 {
            return Err(Error::runtime(format!(
                "record_stream: expected a stream of this device, got one of device type {}",
                s.device.device_type
            )));
        }
        Ok(())
    }

    fn view_as_real(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        copy::view_as_real(self_)
    }

    fn view_as_complex(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        copy::view_as_complex(self_)
    }

    fn relu(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        let dtype = crate::kernels::dtype::DType::from_scalar_type(self_.dtype())?;
        let out = iter::new_output(dtype, &[Input::Tensor(self_)])?;
        unary::relu(self_, out.as_ref())?;
        Ok(out)
    }

    fn relu_inplace(&self, self_: TensorRef<'_>) -> Result<()> {
        unary::relu(self_, self_)
    }

    // Every row of the unary and binary tables (kernels/unary.rs, kernels/binary.rs).
    crate::unary_table!(unary_methods);
    crate::binary_table!(binary_methods);
    // Ternary, parameterised and predicate ops (kernels/pointwise.rs).
    crate::pointwise_methods!();
    // Matrix products on the gemm crate (kernels/matmul.rs).
    crate::matmul_methods!();
    // Indexing, scatter/gather and selection (kernels/index.rs).
    crate::index_methods!();
    // Shape, copy and factory ops (kernels/shape.rs).
    crate::shape_methods!();
    // Sorting and selection (kernels/sort.rs).
    crate::sort_methods!();
    // Unique, histc and bincount (kernels/unique.rs).
    crate::unique_methods!();
    // Convolution, im2col and col2im (kernels/conv.rs).
    crate::conv_methods!();
    // The device's own ops, torch.ops.regen.* (kernels/custom.rs; regen.toml's [[custom_op]]).
    crate::custom_methods!();

    fn angle(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        let input = crate::kernels::dtype::DType::from_scalar_type(self_.dtype())?;
        let dtype = if input.is_complex() {
            input.to_real()
        } else {
            iter::result_dtype(iter::Config::FLOATING, &[Input::Tensor(self_)])?
        };
        let out = iter::new_output(dtype, &[Input::Tensor(self_)])?;
        unary::run::<unary::ops::Angle>(self_, out.as_ref())?;
        Ok(out)
    }

    // Not derived from `.out` by PyTorch: registered as they are.
    fn floor_divide(&self, self_: TensorRef<'_>, other: TensorRef<'_>) -> Result<Tensor> {
        binary::functional::<binary::ops::FloorDivide>(Input::Tensor(self_), Input::Tensor(other))
    }

    fn floor_divide_inplace_tensor(&self, self_: TensorRef<'_>, other: TensorRef<'_>) -> Result<()> {
        binary::run::<binary::ops::FloorDivide>(Input::Tensor(self_), Input::Tensor(other), None, self_)
    }

    fn remainder_scalar_tensor(&self, self_: Scalar, other: TensorRef<'_>) -> Result<Tensor> {
        binary::functional::<binary::ops::Remainder>(Input::Scalar(self_), Input::Tensor(other))
    }

    fn div_out_mode(
        &self,
        self_: TensorRef<'_>,
        other: TensorRef<'_>,
        rounding_mode: Option<&str>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        binary::div_mode(self_, other, rounding_mode, out)
    }

    // Reductions and scans (kernels/reduce.rs, kernels/scan.rs).
    crate::reduce_methods!();
    crate::scan_methods!();
    // Softmax, layer norm and batch norm (kernels/norm.rs).
    crate::norm_methods!();
    // The fused LSTM and GRU cells (kernels/rnn.rs).
    crate::rnn_methods!();
    // The fused optimizer steps (kernels/optim.rs).
    crate::optim_methods!();
    // GradScaler's unscale-and-check and scale update (kernels/amp.rs).
    crate::amp_methods!();
    // nll_loss and nll_loss2d (kernels/loss.rs).
    crate::loss_methods!();
    // Max, average and adaptive pooling (kernels/pool.rs).
    crate::pool_methods!();
    // Linear/cubic upsampling, reflection and replication padding, grid sampling
    // (kernels/resample.rs).
    crate::resample_methods!();
    // Antialiased and uint8 bilinear/bicubic resampling (kernels/resample_aa.rs).
    crate::resample_aa_methods!();
    // embedding_dense_backward (kernels/embedding.rs).
    crate::embedding_methods!();
    // Random ops on the device generator (kernels/random.rs).
    crate::random_methods!();
    crate::sampler_methods!();
}
