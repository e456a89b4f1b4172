//! A safe view of a strided tensor in host memory: sizes, strides, storage offset applied to the
//! data pointer, dtype, typed element access, strided iteration, broadcasting and type promotion.

use crate::args::{ScalarType, TensorRef};
use crate::error::{Error, Result};

/// The element types the native kernels compute with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// complex64 (`c10::complex<float>`: two f32).
    C64,
    /// complex128.
    C128,
}

/// Type-promotion category: bool < integral < floating < complex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integral,
    Floating,
    Complex,
}

impl DType {
    pub fn from_scalar_type(t: ScalarType) -> Result<DType> {
        Ok(match t {
            ScalarType::BOOL => DType::Bool,
            ScalarType::BYTE => DType::U8,
            ScalarType::CHAR => DType::I8,
            ScalarType::SHORT => DType::I16,
            ScalarType::INT => DType::I32,
            ScalarType::LONG => DType::I64,
            ScalarType::HALF => DType::F16,
            ScalarType::BFLOAT16 => DType::BF16,
            ScalarType::FLOAT => DType::F32,
            ScalarType::DOUBLE => DType::F64,
            ScalarType(9) => DType::C64,
            ScalarType(10) => DType::C128,
            other => {
                // A RuntimeError, never a TypeError: Python turns a TypeError from `a + b` into
                // "unsupported operand type(s)".
                return Err(Error::runtime(format!(
                    "this device's kernels do not compute in {other}; convert the tensor to a dtype they do (bool, \
                     uint8, int8-int64, float16, bfloat16, float32, float64, complex64, complex128) first"
                )));
            }
        })
    }

    pub fn scalar_type(self) -> ScalarType {
        match self {
            DType::Bool => ScalarType::BOOL,
            DType::U8 => ScalarType::BYTE,
            DType::I8 => ScalarType::CHAR,
            DType::I16 => ScalarType::SHORT,
            DType::I32 => ScalarType::INT,
            DType::I64 => ScalarType::LONG,
            DType::F16 => ScalarType::HALF,
            DType::BF16 => ScalarType::BFLOAT16,
            DType::F32 => ScalarType::FLOAT,
            DType::F64 => ScalarType::DOUBLE,
            DType::C64 => ScalarType(9),
            DType::C128 => ScalarType(10),
        }
    }

    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Floating,
            DType::C64 | DType::C128 => Category::Complex,
            _ => Category::Integral,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
        }
    }

    /// The complex dtype whose parts are at least this dtype's precision.
    fn to_complex(self) -> DType {
        if matches!(self, DType::F64 | DType::C128) { DType::C128 } else { DType::C64 }
    }
}

/// `c10::promoteTypes` of two dtypes: the higher category wins, with the precision both need
/// (uint8 and int8 meet in int16, float16 and bfloat16 in float32, float64 and complex64 in
/// complex128).
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.category(), b.category()) {
        (Category::Complex, _) | (_, Category::Complex) => {
            if [a, b].iter().any(|d| matches!(d, F64 | C128)) {
                C128
            } else {
                C64
            }
        }
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        (Category::Floating, Category::Floating) => match (a, b) {
            (F64, _) | (_, F64) => F64,
            _ => F32,
        },
        (Category::Floating, _) => a,
        (_, Category::Floating) => b,
        _ => match (a, b) {
            (U8, I8) | (I8, U8) => I16,
            (U8, other) | (other, U8) => other,
            _ if a.size() >= b.size() => a,
            _ => b,
        },
    }
}

/// Bytes per element of any `c10::ScalarType` code, including those the kernels do not compute
/// with (complex32, float8, unsigned, bits, sub-byte): enough to copy them.
pub fn element_size(t: ScalarType) -> Option<usize> {
    t.itemsize()
}

/// An element value in its computation domain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Real and imaginary parts.
    Complex(f64, f64),
}

impl Value {
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Bool(b) => f64::from(u8::from(b)),
            Value::Int(i) => i as f64,
            Value::Float(f) | Value::Complex(f, _) => f,
        }
    }
    /// Real and imaginary parts (0 imaginary for reals).
    pub fn as_complex(self) -> (f64, f64) {
        match self {
            Value::Complex(re, im) => (re, im),
            other => (other.as_f64(), 0.0),
        }
    }
    /// As C++ converts to float: an integer rounds once, straight to f32 (through f64 it could
    /// round twice and differ in the last bit, e.g. for int64 values above 2^53).
    pub fn as_f32(self) -> f32 {
        match self {
            Value::Int(i) => i as f32,
            other => other.as_f64() as f32,
        }
    }
    pub fn as_i64(self) -> i64 {
        match self {
            Value::Bool(b) => i64::from(b),
            Value::Int(i) => i,
            Value::Float(f) | Value::Complex(f, _) => f as i64,
        }
    }
    pub fn as_bool(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
            Value::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
}

/// # Safety
/// `p` points to a readable element of `dtype`.
pub unsafe fn load(dtype: DType, p: *const u8) -> Value {
    // SAFETY: per the contract; unaligned reads keep views with odd offsets sound.
    unsafe {
        match dtype {
            DType::Bool => Value::Bool(p.read() != 0),
            DType::U8 => Value::Int(i64::from(p.read())),
            DType::I8 => Value::Int(i64::from(p.cast::<i8>().read())),
            DType::I16 => Value::Int(i64::from(p.cast::<i16>().read_unaligned())),
            DType::I32 => Value::Int(i64::from(p.cast::<i32>().read_unaligned())),
            DType::I64 => Value::Int(p.cast::<i64>().read_unaligned()),
            DType::F16 => Value::Float(half::f16::from_bits(p.cast::<u16>().read_unaligned()).to_f64()),
            DType::BF16 => Value::Float(half::bf16::from_bits(p.cast::<u16>().read_unaligned()).to_f64()),
            DType::F32 => Value::Float(f64::from(p.cast::<f32>().read_unaligned())),
            DType::F64 => Value::Float(p.cast::<f64>().read_unaligned()),
            DType::C64 => {
                let [re, im] = p.cast::<[f32; 2]>().read_unaligned();
                Value::Complex(f64::from(re), f64::from(im))
            }
            DType::C128 => {
                let [re, im] = p.cast::<[f64; 2]>().read_unaligned();
                Value::Complex(re, im)
            }
        }
    }
}

/// # Safety
/// `p` points to a writable element of `dtype`.
pub unsafe fn store(dtype: DType, p: *mut u8, v: Value) {
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
                    Value::Complex(re, im) => (re as f32, im as f32),
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
    let mut ranks: [Option<DType>; 3] = [None; 3];
    for v in operands {
        let (rank, dtype) = match (v.wrapped_number, v.dtype.category()) {
            (true, Category::Floating) => (2, DType::F32),
            (true, Category::Complex) => (2, DType::C64),
            (true, _) => (2, v.dtype),
            (false, _) if v.dim() == 0 => (1, v.dtype),
            _ => (0, v.dtype),
        };
        ranks[rank] = Some(ranks[rank].map_or(dtype, |d| promote(d, dtype)));
    }
    let [dimensioned, zero_dim, wrapped] = ranks;
    combine_categories(dimensioned, combine_categories(zero_dim, wrapped)).unwrap_or(DType::F32)
}

/// A lower-ranked dtype changes a higher-ranked one only when its category is higher (bool
/// promotes with anything); a float operand promoted to complex keeps its precision.
fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let (Some(h), Some(l)) = (higher, lower) else { return higher.or(lower) };
    Some(match (h.category(), l.category()) {
        (Category::Complex, _) => h,
        (Category::Floating, Category::Complex) => h.to_complex(),
        (_, Category::Complex) => l,
        (Category::Floating, _) => h,
        (Category::Bool, _) | (_, Category::Floating) => promote(h, l),
        _ => h,
    })
}

/// `can_cast`: a result may not be written into an output of a lower category.
pub fn check_can_cast(from: DType, to: DType) -> Result<()> {
    if from.category() > to.category() {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            from.name(),
            to.name()
        )));
    }
    Ok(())
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
        assert!(check_can_cast(DType::F32, DType::I64).is_err());
        assert!(check_can_cast(DType::I64, DType::F32).is_ok());
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert!(v(DType::F32, &[2, 3]).is_contiguous());
        assert_eq!(v(DType::F32, &[1, 3]).broadcast_strides(&[2, 3]), vec![0, 1]);
    }

    #[test]
    fn typed_load_and_store() {
        let mut buf = [0u8; 8];
        for (dtype, value) in [
            (DType::F32, Value::Float(1.5)),
            (DType::F64, Value::Float(-2.25)),
            (DType::I32, Value::Int(-7)),
            (DType::I64, Value::Int(1 << 40)),
            (DType::Bool, Value::Bool(true)),
            (DType::F16, Value::Float(-0.5)),
            (DType::BF16, Value::Float(3.0)),
        ] {
            // SAFETY: the buffer holds 8 bytes, enough for every dtype.
            unsafe {
                store(dtype, buf.as_mut_ptr(), value);
                assert_eq!(load(dtype, buf.as_ptr()), value);
            }
        }
    }
}
