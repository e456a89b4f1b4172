//! `embedding_dense_backward`: the weight's gradient as ATen's CPU kernel
//! (`Embedding.cpp`) sums it: rows of the weight split over the pool, each row adding the
//! gradient rows of its indices in index order (`grad_weight[k] += scale · grad[i]`), so sums are
//! deterministic and equal CPU's.

use regen_runtime::{Error, Result, Tensor, TensorRef};

use half::{bf16, f16};

use super::dtype::DType;
use super::iter::new_tensor;
use super::norm::dense;
use super::shape::not_implemented;

/// A float element and its row update `a + scale·b` (CPU's `add_stub` with alpha: fused
/// multiply-add in its vector loop; with scale 1 exactly `a + b`).
trait Acc: Copy + Send + Sync + 'static {
    fn zero() -> Self;
    fn add_scaled(a: Self, b: Self, scale: f64) -> Self;
}

impl Acc for f32 {
    fn zero() -> Self {
        0.0
    }
    #[inline(always)]
    fn add_scaled(a: f32, b: f32, scale: f64) -> f32 {
        if scale == 1.0 { a + b } else { b.mul_add(scale as f32, a) }
    }
}

impl Acc for f64 {
    fn zero() -> Self {
        0.0
    }
    #[inline(always)]
    fn add_scaled(a: f64, b: f64, scale: f64) -> f64 {
        if scale == 1.0 { a + b } else { b.mul_add(scale, a) }
    }
}

macro_rules! acc_half {
    ($($t:ty),*) => {$(
        impl Acc for $t {
            fn zero() -> Self {
                <$t>::from_f32(0.0)
            }
            #[inline(always)]
            fn add_scaled(a: $t, b: $t, scale: f64) -> $t {
                <$t>::from_f32(f32::add_scaled(a.to_f32(), b.to_f32(), scale))
            }
        }
    )*};
}

acc_half!(f16, bf16);

/// `embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)`.
pub fn dense_backward(
    grad: TensorRef<'_>,
    indices: TensorRef<'_>,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let idt = DType::from_scalar_type(indices.dtype())?;
    if idt != DType::I64 && idt != DType::I32 {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding_backward)",
            super::shape::torch_name(idt)
        )));
    }
    let dtype = DType::from_scalar_type(grad.dtype())?;
    if grad.dim() == 0 {
        return Err(Error::index("Dimension specified as -1 but tensor has no dimensions"));
    }
    let width = grad.sizes()[grad.dim() - 1].max(0) as usize;
    let n = indices.numel().max(0) as usize;
    if grad.numel().max(0) as usize != n * width {
        return Err(Error::runtime(format!("shape '[{n}, {width}]' is invalid for input of size {}", grad.numel())));
    }
    if num_weights < 0 {
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {num_weights}: [{num_weights}, {width}]"
        )));
    }
    let rows = num_weights as usize;
    let idx: Vec<i64> = {
        let d = dense(&indices)?;
        // SAFETY: the dense indices hold n elements of their dtype.
        unsafe {
            if idt == DType::I64 {
                std::slice::from_raw_parts(d.ptr as *const i64, n).to_vec()
            } else {
                std::slice::from_raw_parts(d.ptr as *const i32, n).iter().map(|&v| v as i64).collect()
            }
        }
    };
    // CPU would index out of bounds; the device refuses.
    if let Some(&bad) = idx.iter().find(|&&k| k != padding_idx && !(0..num_weights).contains(&k)) {
        return Err(Error::index(format!("index {bad} is out of bounds for dimension 0 with size {num_weights}")));
    }
    let out = new_tensor(&[num_weights, width as i64], dtype)?;
    let g = dense(&grad)?;
    let op = out.as_ref().data_ptr() as usize;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        run::<T>(g.ptr, op, &idx, rows, width, padding_idx, scale_grad_by_freq);
        Ok(out)
    }, else Err(not_implemented("embedding_dense_backward_cpu", dtype)))
}

fn run<T: Acc>(gp: usize, op: usize, idx: &[i64], rows: usize, width: usize, padding_idx: i64, by_freq: bool) {
    // SAFETY: the new output holds rows·width elements.
    unsafe { std::slice::from_raw_parts_mut(op as *mut T, rows * width) }.fill(T::zero());
    let mut counts = vec![0u64; if by_freq { rows } else { 0 }];
    if by_freq {
        for &k in idx.iter().filter(|&&k| k != padding_idx) {
            counts[k as usize] += 1;
        }
    }
    regen_runtime::host::parallel_for(rows, 1000, |start, end| {
        for (i, &k) in idx.iter().enumerate() {
            if k == padding_idx || !(start as i64..end as i64).contains(&k) {
                continue;
            }
            let scale = if by_freq { 1.0 / counts[k as usize] as f64 } else { 1.0 };
            // SAFETY: row k (< rows) of the output, owned by this task; row i of the gradient.
            let (dst, src) = unsafe {
                (
                    std::slice::from_raw_parts_mut((op as *mut T).add(k as usize * width), width),
                    std::slice::from_raw_parts((gp as *const T).add(i * width), width),
                )
            };
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = T::add_scaled(*d, s, scale);
            }
        }
    });
}

/// The `Kernels` method of embedding's backward, invoked once in `backend.rs`.
#[macro_export]
macro_rules! embedding_methods {
    () => {
        fn embedding_dense_backward(
            &self,
            grad_output: TensorRef<'_>,
            indices: TensorRef<'_>,
            num_weights: i64,
            padding_idx: i64,
            scale_grad_by_freq: bool,
        ) -> Result<Tensor> {
            $crate::kernels::embedding::dense_backward(
                grad_output,
                indices,
                num_weights,
                padding_idx,
                scale_grad_by_freq,
            )
        }
    };
}
