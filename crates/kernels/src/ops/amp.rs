//! torch.amp.GradScaler's two kernels, as ATen's CPU kernels compute them
//! (`native/cpu/AmpGradScalerKernels.cpp`): `_amp_foreach_non_finite_check_and_unscale_`
//! multiplies gradients by `inv_scale` in place and raises `found_inf` to 1.0 on any inf or NaN;
//! `_amp_update_scale_` backs the scale off after a step that found one, and grows it after
//! `growth_interval` clean steps in a row.
//!
//! CPU's checks and their wording are kept, with the device in place of "CPU" (as CUDA's kernels
//! say "CUDA").

use std::sync::atomic::{AtomicBool, Ordering};

use regen_runtime::{Error, Result, TensorList, TensorRef};

use crate::engine::dtype::{DType, not_implemented};
use crate::engine::iter::GRAIN;
use crate::engine::scalar::Real;
use crate::ops::norm::Elem;

/// The device type of the device's tensors (PrivateUse1) and the device's name in messages.
const PRIVATE_USE1: i32 = 20;
const DEVICE: &str = "regen";

fn check(ok: bool, message: &str) -> Result<()> {
    if ok { Ok(()) } else { Err(Error::runtime(message)) }
}

fn on_device(t: &TensorRef<'_>) -> bool {
    t.device().device_type == PRIVATE_USE1
}

fn has_dtype(t: &TensorRef<'_>, dtype: DType) -> Result<bool> {
    Ok(DType::from_scalar_type(t.dtype())? == dtype)
}

/// `torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)`.
pub fn non_finite_check_and_unscale(
    scaled_grads: TensorList<'_>,
    found_inf: TensorRef<'_>,
    inv_scale: TensorRef<'_>,
) -> Result<()> {
    if scaled_grads.is_empty() {
        return Ok(());
    }
    check(on_device(&inv_scale), &format!("inv_scale must be a {DEVICE} tensor."))?;
    check(on_device(&found_inf), &format!("found_inf must be a {DEVICE} tensor."))?;
    check(inv_scale.numel() == 1, "inv_scale must be a 1-element tensor.")?;
    check(found_inf.numel() == 1, "found_inf must be a 1-element tensor.")?;
    check(has_dtype(&inv_scale, DType::F32)?, "inv_scale must be a float tensor.")?;
    check(has_dtype(&found_inf, DType::F32)?, "found_inf must be a float tensor.")?;
    // SAFETY: one-element float32 tensors (checked above), live for the call.
    let inv = unsafe { *(inv_scale.data_ptr() as *const f32) };
    let found = found_inf.data_ptr() as *mut f32;
    for t in scaled_grads.iter() {
        check(on_device(&t), &format!("one of scaled_grads was not a {DEVICE} tensor."))?;
        let dtype = DType::from_scalar_type(t.dtype())?;
        // A tensor whose elements share memory would be unscaled more than once; ATen's
        // TensorIterator refuses to write it.
        check(
            t.sizes().iter().zip(t.strides()).all(|(&n, &s)| n <= 1 || s != 0),
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
        )?;
        let any = crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| unscale::<T>(&t, inv),
            else return Err(not_implemented("_amp_foreach_non_finite_check_and_unscale_cpu", dtype)));
        if any {
            // SAFETY: found_inf's one float32 element.
            unsafe { *found = 1.0 };
        }
    }
    Ok(())
}

/// Unscales one tensor in place (any strides); whether it held an inf or NaN. Half types compute
/// in f32 and round once, as ATen's opmath does; f64 multiplies by the f32 `inv` widened.
fn unscale<T: Elem>(t: &TensorRef<'_>, inv: f32) -> bool {
    let n = t.numel() as usize;
    if n == 0 {
        return false;
    }
    let inv_a = <T::Acc as Real>::from_f64(f64::from(inv));
    let one = inv == 1.0;
    let found = AtomicBool::new(false);
    let base = t.data_ptr() as usize;
    let (sizes, strides) = (t.sizes(), t.strides());
    let contiguous = regen_runtime::view::is_contiguous(sizes, strides);
    let step = |p: *mut T| -> bool {
        // SAFETY: p is an element of the tensor, visited once (no two elements share memory).
        unsafe {
            let v = (*p).to_acc();
            if !one {
                *p = T::from_acc(v * inv_a);
            }
            !num_traits::Float::is_finite(v)
        }
    };
    if contiguous {
        regen_runtime::host::parallel_for(n, GRAIN, |lo, hi| {
            let mut bad = false;
            for e in lo..hi {
                bad |= step((base as *mut T).wrapping_add(e));
            }
            if bad {
                found.store(true, Ordering::Relaxed);
            }
        });
        return found.into_inner();
    }
    // Any other layout: an odometer over the indices, last dimension fastest.
    let mut index = vec![0i64; sizes.len()];
    let mut offset = 0isize;
    let mut bad = false;
    for _ in 0..n {
        bad |= step((base as *mut T).wrapping_offset(offset));
        for d in (0..sizes.len()).rev() {
            index[d] += 1;
            offset += strides[d] as isize;
            if index[d] < sizes[d] {
                break;
            }
            offset -= strides[d] as isize * sizes[d] as isize;
            index[d] = 0;
        }
    }
    bad
}

/// `torch._amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
/// growth_interval)`: returns nothing but updates `scale` and `growth_tracker` in place.
pub fn update_scale(
    current_scale: TensorRef<'_>,
    growth_tracker: TensorRef<'_>,
    found_inf: TensorRef<'_>,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
) -> Result<()> {
    check(on_device(&growth_tracker), &format!("growth_tracker must be a {DEVICE} tensor."))?;
    check(on_device(&current_scale), &format!("current_scale must be a {DEVICE} tensor."))?;
    check(on_device(&found_inf), &format!("found_inf must be a {DEVICE} tensor."))?;
    check(growth_tracker.numel() == 1, "growth_tracker must be a 1-element tensor.")?;
    check(current_scale.numel() == 1, "current_scale must be a 1-element tensor.")?;
    check(found_inf.numel() == 1, "found_inf must be a 1-element tensor.")?;
    check(has_dtype(&growth_tracker, DType::I32)?, "growth_tracker must be an int tensor.")?;
    check(has_dtype(&current_scale, DType::F32)?, "current_scale must be a float tensor.")?;
    check(has_dtype(&found_inf, DType::F32)?, "found_inf must be a float tensor.")?;
    let scale = current_scale.data_ptr() as *mut f32;
    let tracker = growth_tracker.data_ptr() as *mut i32;
    // SAFETY: one-element tensors of the checked dtypes, live for the call.
    unsafe {
        if *(found_inf.data_ptr() as *const f32) != 0.0 {
            *scale = (f64::from(*scale) * backoff_factor) as f32;
            *tracker = 0;
        } else {
            // A clean step: the tracker counts it before comparing with the interval.
            let successful = (*tracker).wrapping_add(1);
            if i64::from(successful) == growth_interval {
                let grown = (f64::from(*scale) * growth_factor) as f32;
                // The scale never grows past float32's range to inf.
                if grown.is_finite() {
                    *scale = grown;
                }
                *tracker = 0;
            } else {
                *tracker = successful;
            }
        }
    }
    Ok(())
}

/// This family's kernels: group `amp` of regen.toml's `[implement]`.
impl crate::AmpKernels for crate::Reference {
    fn _amp_foreach_non_finite_check_and_unscale_inplace(
        &self,
        self_: regen_runtime::TensorList<'_>,
        found_inf: TensorRef<'_>,
        inv_scale: TensorRef<'_>,
    ) -> Result<()> {
        non_finite_check_and_unscale(self_, found_inf, inv_scale)
    }

    fn _amp_update_scale_inplace(
        &self,
        self_: TensorRef<'_>,
        growth_tracker: TensorRef<'_>,
        found_inf: TensorRef<'_>,
        scale_growth_factor: f64,
        scale_backoff_factor: f64,
        growth_interval: i64,
    ) -> Result<()> {
        update_scale(self_, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor, growth_interval)
    }
}
