//! A safe view of a strided tensor in host memory: sizes, strides, storage offset applied to the
//! data pointer, dtype, typed element access, strided iteration, broadcasting and type promotion.

use crate::args::{ScalarType, TensorRef};
use crate::dtype::{self, DType, Num, PromotionOperand};
use crate::error::{Error, Result};

/// Bytes per element of any `c10::ScalarType` code, including those the kernels do not compute
/// with (complex32, float8, unsigned, bits, sub-byte): enough to copy them.
pub fn element_size(t: ScalarType) -> Option<usize> {
    t.itemsize()
}

/// # Safety
/// `p` points to a readable element of `dtype`.
pub unsafe fn load(dtype: DType, p: *const u8) -> Num {
    // SAFETY: per the contract; unaligned reads keep views with odd offsets sound.
    unsafe {
        match dtype {
            DType::Bool => Num::Bool(p.read() != 0),
            DType::U8 => Num::Int(i64::from(p.read())),
            DType::I8 => Num::Int(i64::from(p.cast::<i8>().read())),
            DType::I16 => Num::Int(i64::from(p.cast::<i16>().read_unaligned())),
            DType::I32 => Num::Int(i64::from(p.cast::<i32>().read_unaligned())),
            DType::I64 => Num::Int(p.cast::<i64>().read_unaligned()),
            DType::F16 => Num::Float(half::f16::from_bits(p.cast::<u16>().read_unaligned()).to_f64()),
            DType::BF16 => Num::Float(half::bf16::from_bits(p.cast::<u16>().read_unaligned()).to_f64()),
            DType::F32 => Num::Float(f64::from(p.cast::<f32>().read_unaligned())),
            DType::F64 => Num::Float(p.cast::<f64>().read_unaligned()),
            DType::C64 => {
                let [re, im] = p.cast::<[f32; 2]>().read_unaligned();
                Num::Complex(f64::from(re), f64::from(im))
            }
            DType::C128 => {
                let [re, im] = p.cast::<[f64; 2]>().read_unaligned();
                Num::Complex(re, im)
            }
        }
    }
}

/// # Safety
/// `p` points to a writable element of `dtype`.
pub unsafe fn store(dtype: DType, p: *mut u8, v: Num) {
    // SAFETY: per the contract.
    unsafe {
        match dtype {
            DType::Bool => p.write(u8::from(v.as_bool())),
            DType::U8 => p.write(v.as_i64() as u8),
            DType::I8 => p.cast::<i8>().write(v.as_i64() as i8),
            DType::I16 => p.cast::<i16>().write_unaligned(v.as_i64() as i16),
            DType::I32 => p.cast::<i32>().write_unaligned(v.as_i64() as i32),
            DType::I64 => p.cast::<i64>().write_unaligned(v.as_i64()),
            // Rounded through f32, as c10::Half and c10::BFloat16 convert (they are built from a float).
            DType::F16 => p.cast::<u16>().write_unaligned(half::f16::from_f32(v.as_f32()).to_bits()),
            DType::BF16 => p.cast::<u16>().write_unaligned(half::bf16::from_f32(v.as_f32()).to_bits()),
            DType::F32 => p.cast::<f32>().write_unaligned(v.as_f32()),
            DType::F64 => p.cast::<f64>().write_unaligned(v.as_f64()),
            DType::C64 => {
                let (re, im) = match v {
                    Num::Complex(re, im) => (re as f32, im as f32),
                    real => (real.as_f32(), 0.0),
                };
                p.cast::<[f32; 2]>().write_unaligned([re, im]);
            }
            DType::C128 => {
                let (re, im) = v.as_complex();
                p.cast::<[f64; 2]>().write_unaligned([re, im]);
            }
        }
    }
}

/// A strided tensor in host memory (device memory is host memory), metadata copied out.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Address of element 0.
    pub data: *mut u8,
    pub sizes: Vec<i64>,
    /// In elements.
    pub strides: Vec<i64>,
    pub dtype: DType,
    /// A Python number PyTorch wrapped as a 0-dim tensor (`x + 1`): it ranks lowest in
    /// [`result_type`].
    pub wrapped_number: bool,
}

impl View {
    pub fn of(t: &TensorRef<'_>) -> Result<View> {
        if !t.is_defined() {
            return Err(Error::runtime("an undefined tensor where a tensor is required"));
        }
        Ok(View {
            data: t.data_ptr().cast(),
            sizes: t.sizes().to_vec(),
            strides: t.strides().to_vec(),
            dtype: DType::from_scalar_type(t.dtype())?,
            wrapped_number: t.is_wrapped_number(),
        })
    }

    pub fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }

    pub fn dim(&self) -> usize {
        self.sizes.len()
    }

    pub fn is_contiguous(&self) -> bool {
        is_contiguous(&self.sizes, &self.strides)
    }

    /// Strides of this view broadcast to `shape` (0 where a dimension is expanded).
    pub fn broadcast_strides(&self, shape: &[i64]) -> Vec<i64> {
        let lead = shape.len() - self.dim();
        (0..shape.len())
            .map(|d| if d < lead || self.sizes[d - lead] == 1 && shape[d] != 1 { 0 } else { self.strides[d - lead] })
            .collect()
    }
}

/// Contiguous strides for `sizes`.
pub fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1].max(1);
    }
    strides
}

/// The broadcast shape of several shapes, with PyTorch's error when they do not broadcast.
/// Whether `strides` walk `sizes` in row-major order without gaps (size-1 dimensions may have
/// any stride; an empty tensor is contiguous), as `Tensor::is_contiguous()`.
pub fn is_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut expected = 1;
    for (&size, &stride) in sizes.iter().zip(strides).rev() {
        if size != 1 && stride != expected {
            return false;
        }
        expected *= size;
    }
    true
}

pub fn broadcast_shapes(shapes: &[&[i64]]) -> Result<Vec<i64>> {
    let ndim = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1i64; ndim];
    for (k, shape) in shapes.iter().enumerate() {
        let lead = ndim - shape.len();
        for (d, &size) in shape.iter().enumerate() {
            let o = &mut out[lead + d];
            if *o == 1 {
                *o = size;
            } else if size != 1 && size != *o {
                let names = ["a", "b", "c"];
                return Err(Error::runtime(format!(
                    "The size of tensor {} ({}) must match the size of tensor {} ({size}) at non-singleton dimension {}",
                    names[k.saturating_sub(1).min(2)],
                    *o,
                    names[k.min(2)],
                    lead + d
                )));
            }
        }
    }
    Ok(out)
}

/// `at::result_type` of tensor operands, the dtype CPU computes in: tensors with dimensions
/// outrank zero-dim tensors, which outrank wrapped Python numbers; a lower rank counts only when
/// it raises the category, and a wrapped float or complex number then brings the default dtype
/// of its category (float32 or complex64, assuming `torch.get_default_dtype()` is float32), not
/// its own (ATen's `update_result_type_state` and `combine_categories`).
pub fn result_type(operands: &[&View]) -> DType {
    let operands: Vec<PromotionOperand> = operands
        .iter()
        .map(|v| PromotionOperand { dtype: v.dtype, dim: v.dim(), wrapped_number: v.wrapped_number })
        .collect();
    dtype::result_type(&operands).unwrap_or(DType::DEFAULT_FLOAT)
}

/// Visits every index of `shape` in row-major order, passing each operand's element offset
/// (in elements) under its own strides.
pub fn for_each_offset<const N: usize>(shape: &[i64], strides: [&[i64]; N], mut f: impl FnMut([isize; N])) {
    if shape.contains(&0) {
        return;
    }
    let ndim = shape.len();
    let mut index = vec![0i64; ndim];
    let mut offsets = [0isize; N];
    loop {
        // The innermost dimension runs as a plain loop.
        let (inner, inner_strides) =
            if ndim == 0 { (1, [0isize; N]) } else { (shape[ndim - 1], strides.map(|s| s[ndim - 1] as isize)) };
        let mut o = offsets;
        for _ in 0..inner {
            f(o);
            for k in 0..N {
                o[k] += inner_strides[k];
            }
        }
        // Carry into the outer dimensions.
        let mut d = ndim.saturating_sub(1);
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            for k in 0..N {
                offsets[k] += strides[k][d] as isize;
            }
            if index[d] < shape[d] {
                break;
            }
            for k in 0..N {
                offsets[k] -= (strides[k][d] * shape[d]) as isize;
            }
            index[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_iteration_visits_row_major() {
        let mut seen = Vec::new();
        for_each_offset(&[2, 3], [&[3, 1], &[1, 2]], |[a, b]| seen.push((a, b)));
        assert_eq!(seen, vec![(0, 0), (1, 2), (2, 4), (3, 1), (4, 3), (5, 5)]);
        let mut count = 0;
        for_each_offset(&[], [&[]], |_| count += 1);
        assert_eq!(count, 1, "a 0-dim tensor has one element");
        for_each_offset(&[3, 0], [&[0, 1]], |_| panic!("empty"));
    }

    #[test]
    fn broadcasting_and_promotion() {
        assert_eq!(broadcast_shapes(&[&[2, 1, 3], &[4, 1]]).unwrap(), vec![2, 4, 3]);
        let e = broadcast_shapes(&[&[2, 3], &[4]]).unwrap_err();
        assert_eq!(
            e.message(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
        let v = |dtype, sizes: &[i64]| View {
            data: std::ptr::null_mut(),
            sizes: sizes.to_vec(),
            strides: contiguous_strides(sizes),
            dtype,
            wrapped_number: false,
        };
        let wrapped = |dtype| View { wrapped_number: true, ..v(dtype, &[]) };
        let (i32v, f64s, i64s) = (v(DType::I32, &[3]), v(DType::F64, &[]), v(DType::I64, &[]));
        // Expectations from torch.result_type in PyTorch 2.15.
        assert_eq!(result_type(&[&i32v, &f64s]), DType::F64, "a float scalar lifts an int tensor to its category");
        assert_eq!(result_type(&[&i32v, &i64s]), DType::I32, "an int scalar does not widen an int tensor");
        assert_eq!(result_type(&[&v(DType::F32, &[2]), &v(DType::F64, &[2])]), DType::F64);
        assert_eq!(result_type(&[&i32v, &wrapped(DType::F64)]), DType::F32, "a Python float brings the default dtype");
        assert_eq!(result_type(&[&i32v, &wrapped(DType::C128)]), DType::C64);
        assert_eq!(result_type(&[&v(DType::F64, &[2]), &wrapped(DType::C128)]), DType::C128);
        assert_eq!(result_type(&[&v(DType::F16, &[2]), &wrapped(DType::F64)]), DType::F16);
        assert_eq!(result_type(&[&v(DType::Bool, &[2]), &wrapped(DType::I64)]), DType::I64);
        assert_eq!(result_type(&[&v(DType::U8, &[2]), &v(DType::I8, &[2])]), DType::I16);
        assert_eq!(result_type(&[&v(DType::F16, &[2]), &v(DType::BF16, &[2])]), DType::F32);
        assert_eq!(result_type(&[&v(DType::F64, &[2]), &v(DType::C64, &[2])]), DType::C128);
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert!(v(DType::F32, &[2, 3]).is_contiguous());
        assert_eq!(v(DType::F32, &[1, 3]).broadcast_strides(&[2, 3]), vec![0, 1]);
    }

    #[test]
    fn typed_load_and_store() {
        let mut buf = [0u8; 8];
        for (dtype, value) in [
            (DType::F32, Num::Float(1.5)),
            (DType::F64, Num::Float(-2.25)),
            (DType::I32, Num::Int(-7)),
            (DType::I64, Num::Int(1 << 40)),
            (DType::Bool, Num::Bool(true)),
            (DType::F16, Num::Float(-0.5)),
            (DType::BF16, Num::Float(3.0)),
        ] {
            // SAFETY: the buffer holds 8 bytes, enough for every dtype.
            unsafe {
                store(dtype, buf.as_mut_ptr(), value);
                assert_eq!(load(dtype, buf.as_ptr()), value);
            }
        }
    }
}
