//! Matrix products as one batched GEMM: mm, bmm, addmm, addmv, addbmm, baddbmm, dot, vdot,
//! `_addmm_activation`, their `out_dtype` forms and `_int_mm`. Each op is a [`MatOp`] row (how
//! its operands map onto `batch × rows × k` and `batch × k × cols`, and PyTorch's checks with
//! their messages); one engine does the rest: `self` broadcast into the output when `beta != 0`
//! (ignored, NaNs and all, when it is 0), lazily conjugated and negated operands, the split over
//! PyTorch's threads and the dtypes.
//!
//! The backward ops of matmul and linear are contractions ([`contract`]): each dimension of a
//! gradient and its two operands is named once; the engine groups them into the rows, columns,
//! depth and batch of GEMMs, so broadcast batches fold into rows or depth without copies where
//! the strides allow.
//!
//! f32, f64, complex64 and complex128 run on the `gemm` crate (arbitrary row and column strides,
//! so transposed and sliced operands need no copies; conjugation flags for conjugate views).
//! f16 and bf16 compute through f32 temporaries and round once, as ATen's opmath does (gemm's own
//! f16 kernel accumulates across depth blocks in f16). Integers run a simple loop, wrapping as
//! CPU does.

use std::ops::Range;

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Scalar, Tensor, TensorRef, host};

use crate::engine::dtype::{DType, Element, Num};
use crate::ops::copy;

/// How an operand's dimensions map onto the GEMM: a vector is one row (first operand) or one
/// column (second operand), a matrix one problem, a batch of matrices one problem per batch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rank {
    Vector,
    Matrix,
    Batch,
}

/// A matrix op, as a row: its operands' ranks, whether the batch sums into one matrix, whether
/// the first operand is conjugated, and PyTorch's checks of `(self, first, second)`.
pub struct MatOp {
    /// The kernel named in PyTorch's "not implemented for 'Bool'" error.
    pub kernel: &'static str,
    pub operands: [Rank; 2],
    /// addbmm: the products of all batches summed into one matrix.
    pub sum_batches: bool,
    /// vdot: `conj(a) · b`.
    pub conj_first: bool,
    /// Shape and dtype checks with PyTorch's messages (the meta function's, for `out=` calls
    /// that reach the kernel directly).
    pub check: fn(Option<&TensorRef<'_>>, &TensorRef<'_>, &TensorRef<'_>) -> Result<()>,
}

use Rank::{Batch, Matrix, Vector};

pub const MM: MatOp = MatOp {
    kernel: "addmm_impl_cpu_",
    operands: [Matrix, Matrix],
    sum_batches: false,
    conj_first: false,
    check: check_mm,
};
pub const BMM: MatOp =
    MatOp { kernel: "bmm", operands: [Batch, Batch], sum_batches: false, conj_first: false, check: check_bmm };
pub const ADDBMM: MatOp = MatOp {
    kernel: "addmm_impl_cpu_",
    operands: [Batch, Batch],
    sum_batches: true,
    conj_first: false,
    check: check_addbmm,
};
pub const ADDMV: MatOp = MatOp {
    kernel: "addmv_impl_cpu",
    operands: [Matrix, Vector],
    sum_batches: false,
    conj_first: false,
    check: check_addmv,
};
pub const DOT: MatOp =
    MatOp { kernel: "dot", operands: [Vector, Vector], sum_batches: false, conj_first: false, check: check_dot };
pub const VDOT: MatOp =
    MatOp { kernel: "vdot", operands: [Vector, Vector], sum_batches: false, conj_first: true, check: check_dot };

/// The dtype's C++ name, as PyTorch's `TypeMeta` prints it in some messages.
fn cpp_name(t: &TensorRef<'_>) -> &'static str {
    DType::from_scalar_type(t.dtype()).map_or("unknown", crate::engine::dtype::torch_name)
}

/// The `c10::ScalarType` name (`Float`).
fn name(t: &TensorRef<'_>) -> &'static str {
    DType::from_scalar_type(t.dtype()).map_or("Unknown", DType::name)
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(Error::runtime(message())) }
}

/// mm, addmm, `_addmm_activation` (TORCH_META_FUNC(mm) / addmm).
fn check_mm(bias: Option<&TensorRef<'_>>, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    let op = if bias.is_some() { "addmm" } else { "mm" };
    check(a.dim() == 2, || format!("{op}: self must be a matrix, got {}-D tensor", a.dim()))?;
    check(b.dim() == 2, || format!("{op}: mat2 must be a matrix, got {}-D tensor", b.dim()))?;
    let (sa, sb) = (a.sizes(), b.sizes());
    check(sa[1] == sb[0], || {
        format!("{op}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", sa[0], sa[1], sb[0], sb[1])
    })?;
    match bias {
        Some(s) => {
            check(s.dtype() == b.dtype(), || {
                format!("self and mat2 must have the same dtype, but got {} and {}", name(s), name(b))
            })?;
            check(a.dtype() == b.dtype(), || {
                format!("mat1 and mat2 must have the same dtype, but got {} and {}", name(a), name(b))
            })
        }
        None => check(a.dtype() == b.dtype(), || {
            format!("expected m1 and m2 to have the same dtype, but got: {} != {}", cpp_name(a), cpp_name(b))
        }),
    }
}

/// bmm, baddbmm (`common_checks_baddbmm_bmm`).
fn check_bmm(bias: Option<&TensorRef<'_>>, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    check(a.dim() == 3, || "batch1 must be a 3D tensor".into())?;
    check(b.dim() == 3, || "batch2 must be a 3D tensor".into())?;
    if let Some(s) = bias {
        check(s.dtype() == a.dtype() && s.dtype() == b.dtype(), || {
            format!(
                "Input dtypes must be the same, got: input {}, batch1: {}, batch2: {}",
                cpp_name(s),
                cpp_name(a),
                cpp_name(b)
            )
        })?;
    }
    let (sa, sb) = (a.sizes(), b.sizes());
    check(sb[0] == sa[0] && sb[1] == sa[2], || {
        format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            sa[0], sa[2], sb[0], sb[1]
        )
    })?;
    check(a.dtype() == b.dtype(), || format!("expected scalar type {} but found {}", name(a), name(b)))
}

/// addbmm (`addbmm_impl_`, then addmm's dtype checks per batch).
fn check_addbmm(bias: Option<&TensorRef<'_>>, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    check(a.dim() == 3, || "batch1 must be a 3D tensor".into())?;
    check(b.dim() == 3, || "batch2 must be a 3D tensor".into())?;
    let (sa, sb) = (a.sizes(), b.sizes());
    check(sa[0] == sb[0], || {
        format!("batch1 and batch2 must have same number of batches, got {} and {}", sa[0], sb[0])
    })?;
    check(sa[2] == sb[1], || {
        format!("Incompatible matrix sizes for bmm ({}x{} and {}x{})", sa[1], sa[2], sb[1], sb[2])
    })?;
    if let Some(s) = bias {
        check(s.dtype() == b.dtype(), || {
            format!("self and mat2 must have the same dtype, but got {} and {}", name(s), name(b))
        })?;
    }
    check(a.dtype() == b.dtype(), || {
        format!("mat1 and mat2 must have the same dtype, but got {} and {}", name(a), name(b))
    })
}

/// addmv (TORCH_META_FUNC(addmv)); mv reaches it with `self` the output.
fn check_addmv(bias: Option<&TensorRef<'_>>, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    let s_dim = bias.map_or(1, TensorRef::dim);
    check(a.dim() == 2 && b.dim() == 1 && s_dim <= 1, || {
        format!("vector + matrix @ vector expected, got {s_dim}, {}, {}", a.dim(), b.dim())
    })?;
    let (sa, sb) = (a.sizes(), b.sizes());
    if let Some(s) = bias {
        let n = s.numel();
        check(sa[1] == sb[0] && (sa[0] == n || n == 1), || {
            let input = s.sizes().first().copied().unwrap_or(1);
            format!("size mismatch, got input ({input}), mat ({}x{}), vec ({})", sa[0], sa[1], sb[0])
        })?;
        check(s.dtype() == a.dtype() && a.dtype() == b.dtype(), || {
            format!("addmv input tensors must have the same dtype, but got {}, {}, and {}", name(s), name(a), name(b))
        })
    } else {
        check(sa[1] == sb[0], || format!("size mismatch, got mat ({}x{}), vec ({})", sa[0], sa[1], sb[0]))
    }
}

/// dot, vdot (`dot_check`).
fn check_dot(_: Option<&TensorRef<'_>>, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    check(a.dim() == 1 && b.dim() == 1, || {
        format!("1D tensors expected, but got {}D and {}D tensors", a.dim(), b.dim())
    })?;
    check(a.dtype() == b.dtype(), || {
        format!("dot : expected both vectors to have same dtype, but found {} and {}", name(a), name(b))
    })?;
    check(a.numel() == b.numel(), || {
        format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            a.numel(),
            b.numel(),
            a.numel(),
            b.numel()
        )
    })
}

impl MatOp {
    /// The output's shape: the batch (unless summed), the first operand's rows, the second's
    /// columns.
    fn out_shape(&self, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Vec<i64> {
        let (sa, sb) = (a.sizes(), b.sizes());
        let mut shape = Vec::with_capacity(3);
        match self.operands[0] {
            Batch if !self.sum_batches => shape.extend([sa[0], sa[1]]),
            Batch => shape.push(sa[1]),
            Matrix => shape.push(sa[0]),
            Vector => {}
        }
        match self.operands[1] {
            Batch => shape.push(sb[2]),
            Matrix => shape.push(sb[1]),
            Vector => {}
        }
        shape
    }
}

fn is_zero(s: &Scalar) -> bool {
    match *s {
        Scalar::Bool(b) => !b,
        Scalar::Int(i) => i == 0,
        Scalar::Float(f) => f == 0.0,
        Scalar::Complex(re, im) => re == 0.0 && im == 0.0,
    }
}

/// ATen's `expand` check of `self` against the output's shape, with its messages.
fn check_expand(s: &TensorRef<'_>, shape: &[i64]) -> Result<()> {
    let sizes = s.sizes();
    check(sizes.len() <= shape.len(), || {
        format!(
            "expand(torch.{}Tensor{{{:?}}}, size={:?}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            name(s),
            sizes,
            shape,
            shape.len(),
            sizes.len()
        )
    })?;
    let lead = shape.len() - sizes.len();
    for (d, &size) in sizes.iter().enumerate() {
        let target = shape[lead + d];
        check(size == 1 || size == target, || {
            format!(
                "The expanded size of the tensor ({target}) must match the existing size ({size}) at non-singleton dimension {}.  Target sizes: {shape:?}.  Tensor sizes: {sizes:?}",
                lead + d
            )
        })?;
    }
    Ok(())
}

/// `out = beta * self + alpha * op(a, b)` (`self` broadcast to the output; ignored when `bias`
/// is `None` or `beta` is 0), after the op's checks; `out` is resized to the product's shape.
pub fn run(
    op: &MatOp,
    bias: Option<(TensorRef<'_>, Scalar)>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    alpha: Scalar,
    out: TensorRef<'_>,
) -> Result<()> {
    run_then(op, bias, a, b, alpha, out, |_| Ok(()))
}

/// [`run`], then `then` on the (resized) output: `_addmm_activation`'s relu or gelu.
pub fn run_then(
    op: &MatOp,
    bias: Option<(TensorRef<'_>, Scalar)>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    alpha: Scalar,
    out: TensorRef<'_>,
    then: impl FnOnce(TensorRef<'_>) -> Result<()>,
) -> Result<()> {
    (op.check)(bias.as_ref().map(|(s, _)| s), &a, &b)?;
    not_bool(op, &a)?;
    check(out.dtype() == a.dtype(), || {
        format!("Expected out tensor to have dtype {}, but got {} instead", cpp_name(&a), cpp_name(&out))
    })?;
    product(op, bias, a, b, alpha, out, then)
}

/// The `out_dtype` forms (`mm.dtype`, `addmm.dtype_out`, ...), which CPU does not have: CUDA's
/// semantics and messages. The output is in the inputs' dtype, or in float32 for float16 and
/// bfloat16 inputs, whose products then accumulate in float32 and are written without rounding.
/// `self` has the inputs' dtype (CUDA's addmm check), broadcast as in the op without `out_dtype`.
/// Releases before 2.8 have no `out_dtype` op, so nothing calls it there.
#[cfg_attr(not(regen_has_op = "mm.dtype_out"), allow(dead_code))]
pub fn run_dtype(
    op: &MatOp,
    bias: Option<(TensorRef<'_>, Scalar)>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    alpha: Scalar,
    out_dtype: regen_runtime::ScalarType,
    out: TensorRef<'_>,
) -> Result<()> {
    (op.check)(bias.as_ref().map(|(s, _)| s), &a, &b)?;
    not_bool(op, &a)?;
    let wide = matches!(DType::from_scalar_type(a.dtype())?, DType::F16 | DType::BF16)
        && DType::from_scalar_type(out_dtype)? == DType::F32;
    check(out_dtype == a.dtype() || wide, || {
        "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs".into()
    })?;
    check(out.dtype() == out_dtype, || "out_dtype must be the same as the dtype of the provided out tensor".into())?;
    product(op, bias, a, b, alpha, out, |_| Ok(()))
}

/// ATen dispatches the kernel on every dtype but Bool.
fn not_bool(op: &MatOp, a: &TensorRef<'_>) -> Result<()> {
    if DType::from_scalar_type(a.dtype())? == DType::Bool {
        return Err(Error::not_implemented(format!("\"{}\" not implemented for 'Bool'", op.kernel)));
    }
    Ok(())
}

/// The checked product into `out`, whose dtype is the operands' or, for float16 and bfloat16
/// operands, float32.
fn product(
    op: &MatOp,
    bias: Option<(TensorRef<'_>, Scalar)>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    alpha: Scalar,
    out: TensorRef<'_>,
    then: impl FnOnce(TensorRef<'_>) -> Result<()>,
) -> Result<()> {
    let dtype = DType::from_scalar_type(a.dtype())?;
    let shape = op.out_shape(&a, &b);
    if let Some((s, _)) = &bias {
        check_expand(s, &shape)?;
    }
    let bias = bias.filter(|(_, beta)| !is_zero(beta));
    for s in [Some(alpha), bias.map(|(_, beta)| beta)].into_iter().flatten() {
        check_scalar(s, dtype)?;
    }
    with_size(&out, &shape, |out| {
        if let Some((s, _)) = bias {
            copy::copy_(*out, s)?;
        }
        let beta = bias.map(|(_, beta)| Num::from_scalar(beta));
        if out.dtype() == a.dtype() {
            compute(op, a, b, beta, Num::from_scalar(alpha), *out, None)?;
        } else {
            // float16/bfloat16 operands into a float32 output: the float32 path on widened
            // copies, straight into the output.
            let (a32, b32) = (copy::dense(a, DType::F32)?, copy::dense(b, DType::F32)?);
            compute(op, a32.as_ref(), b32.as_ref(), beta, Num::from_scalar(alpha), *out, None)?;
        }
        then(*out)
    })
}

/// `c10::Scalar::to<T>`'s check: a complex number with an imaginary part does not become real.
fn check_scalar(s: Scalar, dtype: DType) -> Result<()> {
    match s {
        Scalar::Complex(_, im) if im != 0.0 && !dtype.is_complex() => {
            let cpp = match dtype {
                DType::F32 => "float",
                DType::F64 => "double",
                DType::F16 => "c10::Half",
                DType::BF16 => "c10::BFloat16",
                _ => "an integer",
            };
            Err(Error::runtime(format!("value cannot be converted to type {cpp} without overflow")))
        }
        _ => Ok(()),
    }
}

/// The product into `out`, which holds `self` already when `beta` is given.
fn compute(
    op: &MatOp,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    beta: Option<Num>,
    alpha: Num,
    out: TensorRef<'_>,
    reduced: Option<DType>,
) -> Result<()> {
    let dtype = DType::from_scalar_type(a.dtype())?;
    if matches!(dtype, DType::F16 | DType::BF16) {
        // Through f32 temporaries, rounded once at the end (ATen's opmath for reduced floats).
        let (a32, b32) = (copy::dense(a, DType::F32)?, copy::dense(b, DType::F32)?);
        let out32 = match beta {
            Some(_) => copy::dense(out, DType::F32)?,
            None => {
                let strides = regen_runtime::view::contiguous_strides(out.sizes());
                host::empty_strided(out.sizes(), &strides, DType::F32.code())?
            }
        };
        compute(op, a32.as_ref(), b32.as_ref(), beta, alpha, out32.as_ref(), Some(dtype))?;
        return copy::copy_(out, out32.as_ref());
    }
    let mut p = Problem::new(op, &a, &b, &out, beta.is_some());
    let round: Option<unsafe fn(&Problem, Range<usize>)> = match reduced {
        Some(DType::F16) => Some(round_rows::<half::f16>),
        Some(DType::BF16) => Some(round_rows::<half::bf16>),
        _ => None,
    };
    p.round = round.filter(|_| p.sum_batches && p.batch > 1);
    // Negative views fold into alpha.
    let alpha = if a.is_neg() != b.is_neg() { negate(alpha) } else { alpha };
    let beta = beta.unwrap_or(Num::Int(0));
    // ATen multiplies small batches (depth × rows × cols < 400) in its own loop: so does the
    // device, for the same sums in the same order. addbmm's small products are one BLAS call per
    // batch on CPU, whose order the device follows for real floats.
    let small = p.m * p.n * p.k < 400;
    // SAFETY: the problem describes the live tensors of this call, checked above; `out` was
    // sized to the product's shape.
    unsafe {
        if small && op.operands[0] == Batch && !op.sum_batches {
            crate::dispatch!(dtype, [F32, F64, C64, C128], |T| return {
                execute(&p, &Loop::<T> { alpha: T::from_num(alpha), beta: T::from_num(beta) });
                Ok(())
            }, else ())
        }
        if small && op.sum_batches {
            crate::dispatch!(dtype, [F32, F64], |T| return {
                execute(&p, &Fused::<T> { alpha: T::from_num(alpha), beta: T::from_num(beta) });
                Ok(())
            }, else ())
        }
        crate::dispatch!(dtype, [F32, F64, C64, C128], |T| execute(&p, &Gemm::<T> { alpha: T::from_num(alpha), beta: T::from_num(beta) }), else
        crate::dispatch!(dtype, [U8, I8, I16, I32, I64], |T| execute(&p, &Loop::<T> { alpha: T::from_num(alpha), beta: T::from_num(beta) }), else
            return Err(crate::engine::dtype::not_implemented(op.kernel, dtype))))
    }
    Ok(())
}

/// Rounds `rows` of the problem's f32 output to `R`'s precision, in place.
///
/// # Safety
/// The output is f32 and `rows` lie inside it.
unsafe fn round_rows<R: Element<Acc = f32>>(p: &Problem, rows: Range<usize>) {
    for i in rows {
        for j in 0..p.n {
            // SAFETY: per the contract.
            unsafe {
                let o = p.out.at::<f32>(0, i, j);
                *o = R::from_acc(*o).to_acc();
            }
        }
    }
}

fn negate(n: Num) -> Num {
    match n {
        Num::Bool(b) => Num::Int(-i64::from(b)),
        Num::Int(i) => Num::Int(i.wrapping_neg()),
        Num::Float(f) => Num::Float(-f),
        Num::Complex(re, im) => Num::Complex(-re, -im),
    }
}

/// One operand as `(batch, rows, cols)` element strides from its data pointer.
#[derive(Clone, Copy, Debug)]
struct Mat {
    ptr: *mut u8,
    s: [isize; 3],
}

impl Mat {
    /// The transposed matrix (rows and columns swapped).
    fn t(self) -> Mat {
        Mat { ptr: self.ptr, s: [self.s[0], self.s[2], self.s[1]] }
    }
    /// # Safety
    /// `(b, r, c)` lies inside the operand.
    unsafe fn at<T>(&self, b: usize, r: usize, c: usize) -> *mut T {
        let off = b as isize * self.s[0] + r as isize * self.s[1] + c as isize * self.s[2];
        // SAFETY: per the contract.
        unsafe { self.ptr.cast::<T>().offset(off) }
    }
}

/// `out[b] = beta·out[b] (when read_out) + alpha·lhs[b] @ rhs[b]` for `b < batch` (or, when
/// `sum_batches`, the sum over `b` into one matrix): `m × k` times `k × n`.
#[derive(Debug)]
struct Problem {
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
    out: Mat,
    lhs: Mat,
    rhs: Mat,
    conj_lhs: bool,
    conj_rhs: bool,
    sum_batches: bool,
    read_out: bool,
    /// For f16/bf16 through f32 with summed batches: rounds rows of the f32 output to the
    /// reduced dtype after each batch, as ATen's addbmm (one rounded addmm_ per batch) does.
    round: Option<unsafe fn(&Problem, Range<usize>)>,
}

// SAFETY: the problem describes tensors kept alive by the kernel call; threads write disjoint
// rows of the output.
unsafe impl Sync for Problem {}

impl Problem {
    fn new(op: &MatOp, a: &TensorRef<'_>, b: &TensorRef<'_>, out: &TensorRef<'_>, read_out: bool) -> Problem {
        Problem::layout(op, a, b, out, read_out).oriented()
    }

    /// The problem as the op states it (rows of the first operand).
    fn layout(op: &MatOp, a: &TensorRef<'_>, b: &TensorRef<'_>, out: &TensorRef<'_>, read_out: bool) -> Problem {
        let st = |t: &TensorRef<'_>, d: usize| t.strides()[d] as isize;
        let sz = |t: &TensorRef<'_>, d: usize| t.sizes()[d] as usize;
        let ptr = |t: &TensorRef<'_>| t.data_ptr().cast::<u8>();
        let (batch, m, k, lhs) = match op.operands[0] {
            Vector => (1, 1, sz(a, 0), [0, 0, st(a, 0)]),
            Matrix => (1, sz(a, 0), sz(a, 1), [0, st(a, 0), st(a, 1)]),
            Batch => (sz(a, 0), sz(a, 1), sz(a, 2), [st(a, 0), st(a, 1), st(a, 2)]),
        };
        let (n, rhs) = match op.operands[1] {
            Vector => (1, [0, st(b, 0), 0]),
            Matrix => (sz(b, 1), [0, st(b, 0), st(b, 1)]),
            Batch => (sz(b, 2), [st(b, 0), st(b, 1), st(b, 2)]),
        };
        // The output's dimensions are (batch, rows, cols) with the absent ones dropped.
        let present = [op.operands[0] == Batch && !op.sum_batches, op.operands[0] != Vector, op.operands[1] != Vector];
        let mut o = [0isize; 3];
        let mut d = 0;
        for (i, p) in present.iter().enumerate() {
            if *p {
                o[i] = st(out, d);
                d += 1;
            }
        }
        let mut p = Problem {
            batch,
            m,
            n,
            k,
            out: Mat { ptr: ptr(out), s: o },
            lhs: Mat { ptr: ptr(a), s: lhs },
            rhs: Mat { ptr: ptr(b), s: rhs },
            conj_lhs: a.is_conj() != op.conj_first,
            conj_rhs: b.is_conj(),
            sum_batches: op.sum_batches,
            read_out,
            round: None,
        };
        if p.sum_batches && p.batch == 0 {
            // No products: one empty-depth product leaves beta·self (or zeros).
            (p.batch, p.k) = (1, 0);
        }
        p
    }

    /// Threads split the rows: the longer side made the rows (outᵀ = rhsᵀ·lhsᵀ).
    fn oriented(self) -> Problem {
        if self.n <= self.m {
            return self;
        }
        Problem {
            m: self.n,
            n: self.m,
            out: self.out.t(),
            lhs: self.rhs.t(),
            rhs: self.lhs.t(),
            conj_lhs: self.conj_rhs,
            conj_rhs: self.conj_lhs,
            ..self
        }
    }
}

/// Rows of the output handed to a kernel as one unit (a multiple of the micro-kernels' heights).
const ROWS: usize = 32;
/// The fewest multiply-adds worth a thread of their own (a 64³ product).
const MIN_WORK: usize = 1 << 18;

/// A kernel for one block of output rows of one batch.
trait Block: Sync {
    /// `out[b][rows] = (first ? beta : 1)·out[b][rows] (when read) + alpha·lhs[b][rows] @ rhs[b]`.
    ///
    /// # Safety
    /// `b` and `rows` lie inside the problem, whose pointers describe live memory.
    unsafe fn block(&self, p: &Problem, b: usize, rows: Range<usize>, read: bool, first: bool);
}

/// Splits the problem over the runtime's pool (`host::parallel_for`, as many threads as
/// `torch.set_num_threads` says) in blocks of rows across batches; each chunk makes one kernel call
/// per batch it covers, so packing costs stay per chunk, not per block.
///
/// # Safety
/// The problem describes live tensors; the output does not overlap the operands.
unsafe fn execute<K: Block>(p: &Problem, kernel: &K) {
    if p.m == 0 || p.n == 0 || p.batch == 0 {
        return;
    }
    let blocks = p.m.div_ceil(ROWS);
    let (items, batches_per_item) = if p.sum_batches { (blocks, p.batch) } else { (p.batch * blocks, 1) };
    let work = (ROWS.min(p.m) * p.n * p.k.max(1) * batches_per_item).max(1);
    let grain = MIN_WORK.div_ceil(work).max(1);
    host::parallel_for(items, grain, |i0, i1| {
        if p.sum_batches {
            let rows = i0 * ROWS..(i1 * ROWS).min(p.m);
            for b in 0..p.batch {
                // SAFETY: per the contract, rows inside `0..m`.
                unsafe { kernel.block(p, b, rows.clone(), p.read_out || b > 0, b == 0) };
                if let Some(round) = p.round {
                    // SAFETY: as above.
                    unsafe { round(p, rows.clone()) };
                }
            }
            return;
        }
        let mut i = i0;
        while i < i1 {
            let (b, first) = (i / blocks, i % blocks);
            let last = blocks.min(first + (i1 - i));
            // SAFETY: per the contract.
            unsafe { kernel.block(p, b, first * ROWS..(last * ROWS).min(p.m), p.read_out, true) };
            i += last - first;
        }
    });
}

/// f32, f64, complex64, complex128: the `gemm` crate, one thread per call.
struct Gemm<T> {
    alpha: T,
    beta: T,
}

impl<T: Element> Block for Gemm<T> {
    unsafe fn block(&self, p: &Problem, b: usize, rows: Range<usize>, read: bool, first: bool) {
        let (lhs, out) = (p.lhs, p.out);
        // SAFETY: per the contract; gemm reads `rows × k` of lhs, `k × n` of rhs and writes
        // `rows × n` of out at the given strides.
        unsafe {
            gemm::gemm(
                rows.len(),
                p.n,
                p.k,
                out.at::<T>(b, rows.start, 0),
                out.s[2],
                out.s[1],
                read,
                lhs.at::<T>(b, rows.start, 0),
                lhs.s[2],
                lhs.s[1],
                p.rhs.at::<T>(b, 0, 0),
                p.rhs.s[2],
                p.rhs.s[1],
                if first { self.beta } else { T::one() },
                self.alpha,
                false,
                p.conj_lhs,
                p.conj_rhs,
                gemm::Parallelism::None,
            )
        }
    }
}

/// The arithmetic of the simple loop: wrapping for integers (as C++'s on CPU), plain IEEE for
/// floats (no fused multiply-add, as ATen's baseline-compiled loop), conjugation for complex.
trait Arith: Element {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn conj(self) -> Self {
        self
    }
}

macro_rules! wrapping {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
        }
    )*};
}
wrapping!(u8, i8, i16, i32, i64);

macro_rules! ieee {
    ($($t:ty: $conj:expr),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn conj(self) -> Self {
                $conj(self)
            }
        }
    )*};
}
ieee!(f32: |x| x, f64: |x| x, num_complex::Complex32: |z| num_complex::Complex32::conj(&z), num_complex::Complex64: |z| num_complex::Complex64::conj(&z));

/// Integers, and the small batched products ATen computes with its own loop: a row at a time in
/// i-k-j order (the inner loop runs along a row of rhs and of the accumulator), accumulating in
/// the dtype, each sum in order of depth from 0 (the order of ATen's `baddbmm_cpu_kernel`).
struct Loop<T> {
    alpha: T,
    beta: T,
}

impl<T: Arith> Block for Loop<T> {
    unsafe fn block(&self, p: &Problem, b: usize, rows: Range<usize>, read: bool, first: bool) {
        let factor = if first { self.beta } else { T::one() };
        let mut acc = vec![T::zero(); p.n];
        for i in rows {
            acc.iter_mut().for_each(|x| *x = T::zero());
            for q in 0..p.k {
                // SAFETY: per the contract, (b, i, q) and (b, q, j) lie inside the operands.
                let x = unsafe { *p.lhs.at::<T>(b, i, q) };
                let x = if p.conj_lhs { x.conj() } else { x };
                for (j, s) in acc.iter_mut().enumerate() {
                    // SAFETY: as above.
                    let y = unsafe { *p.rhs.at::<T>(b, q, j) };
                    *s = s.add(x.mul(if p.conj_rhs { y.conj() } else { y }));
                }
            }
            for (j, s) in acc.iter().enumerate() {
                // SAFETY: as above; (b, i, j) lies inside the output.
                unsafe {
                    let o = p.out.at::<T>(b, i, j);
                    // bmm writes the sum itself (a complex 1·inf would make NaNs).
                    let v = if self.alpha == T::one() { *s } else { self.alpha.mul(*s) };
                    *o = if read { factor.mul(*o).add(v) } else { v };
                }
            }
        }
    }
}

/// Fused multiply-add for the real floats.
trait Fma: Element + std::ops::Mul<Output = Self> {
    fn fma(self, a: Self, b: Self) -> Self;
}

impl Fma for f32 {
    #[inline(always)]
    fn fma(self, a: f32, b: f32) -> f32 {
        self.mul_add(a, b)
    }
}

impl Fma for f64 {
    #[inline(always)]
    fn fma(self, a: f64, b: f64) -> f64 {
        self.mul_add(a, b)
    }
}

/// addbmm's small products, summed as CPU's BLAS (MKL) sums one `addmm_` of these sizes: each
/// element a chain of fused multiply-adds in order of depth from 0, then
/// `out = fma(factor, out, alpha·sum)`. The gemm crate's kernels sum in another order, which
/// cancellation over the batches can make visible (2e-5 in an element of an OpInfo sample).
struct Fused<T> {
    alpha: T,
    beta: T,
}

impl<T: Fma> Block for Fused<T> {
    unsafe fn block(&self, p: &Problem, b: usize, rows: Range<usize>, read: bool, first: bool) {
        let factor = if first { self.beta } else { T::one() };
        let mut acc = vec![T::zero(); p.n];
        for i in rows {
            acc.iter_mut().for_each(|x| *x = T::zero());
            for q in 0..p.k {
                // SAFETY: per the contract, (b, i, q) and (b, q, j) lie inside the operands.
                let x = unsafe { *p.lhs.at::<T>(b, i, q) };
                for (j, s) in acc.iter_mut().enumerate() {
                    // SAFETY: as above.
                    *s = x.fma(unsafe { *p.rhs.at::<T>(b, q, j) }, *s);
                }
            }
            for (j, s) in acc.iter().enumerate() {
                // SAFETY: as above; (b, i, j) lies inside the output.
                unsafe {
                    let o = p.out.at::<T>(b, i, j);
                    let v = if self.alpha == T::one() { *s } else { self.alpha * *s };
                    *o = if read { factor.fma(*o, v) } else { v };
                }
            }
        }
    }
}

/// A 0-dim output of `a`'s dtype for dot and vdot.
pub fn dot(op: &MatOp, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<Tensor> {
    (op.check)(None, &a, &b)?;
    let out = host::empty_strided(&[], &[], a.dtype().0)?;
    run(op, None, a, b, Scalar::Int(1), out.as_ref())?;
    Ok(out)
}

/// `_int_mm`: int8 (or uint8) × int8 → int32, with CPU's checks (`_int_mm_out_cpu`).
pub const INT_MM: MatOp =
    MatOp { kernel: "_int_mm", operands: [Matrix, Matrix], sum_batches: false, conj_first: false, check: check_int_mm };

fn check_int_mm(_: Option<&TensorRef<'_>>, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    check(a.dim() == 2, || format!("_int_mm: self must be a matrix, got {}-D tensor", a.dim()))?;
    check(b.dim() == 2, || format!("_int_mm: mat2 must be a matrix, got {}-D tensor", b.dim()))?;
    let (sa, sb) = (a.sizes(), b.sizes());
    check(sa[1] == sb[0], || {
        format!("_int_mm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", sa[0], sa[1], sb[0], sb[1])
    })?;
    check(matches!(DType::from_scalar_type(a.dtype()), Ok(DType::I8 | DType::U8)), || {
        format!("int_mm_out_cpu: Expected self dtype to be int8 or uint8 but got {}", cpp_name(a))
    })?;
    check(DType::from_scalar_type(b.dtype())? == DType::I8, || {
        format!("int_mm_out_cpu: Expected mat2 dtype to be of type int8 but got {}", cpp_name(b))
    })
}

/// `t.size(d)` as ATen's `TensorBase::size` checks it (no wrapping of 0-dim tensors).
fn size_at(t: &TensorRef<'_>, d: i64) -> Result<i64> {
    let n = t.dim() as i64;
    if n == 0 {
        return Err(Error::index(format!("Dimension specified as {d} but tensor has no dimensions")));
    }
    let w = if d < 0 { d + n } else { d };
    if !(0..n).contains(&w) {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
            -n,
            n - 1
        )));
    }
    Ok(t.sizes()[w as usize])
}

/// ATen's `is_contiguous` (size-1 dimensions' strides do not matter, empty tensors are).
fn is_contiguous(t: &TensorRef<'_>) -> bool {
    regen_runtime::view::is_contiguous(t.sizes(), t.strides())
}

/// `_int_mm.out`: CPU's checks of the output (never resized), then the product.
pub fn int_mm_out(a: TensorRef<'_>, b: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    check_int_mm(None, &a, &b)?;
    check(DType::from_scalar_type(out.dtype())? == DType::I32, || {
        format!("int_mm_out_cpu: Expected result dtype to be of type kInt but got {}", cpp_name(&out))
    })?;
    let (m, n) = (a.sizes()[0], b.sizes()[1]);
    let rows = size_at(&out, 0)?;
    check(rows == m, || format!("int_mm_out_cpu: Expected result.size(0) to be {m} but got {rows}"))?;
    let cols = size_at(&out, 1)?;
    check(cols == n, || format!("int_mm_out_cpu: Expected result.size(1) to be {n} but got {cols}"))?;
    check(out.dim() == 2, || format!("int_mm_out_cpu: Expected result to be of dimension 2 but got {}", out.dim()))?;
    check(is_contiguous(&out), || "int_mm_out_cpu: Expected result to be contiguous.".into())?;
    let p = Problem::layout(&INT_MM, &a, &b, &out, false);
    // The longer side becomes the rows, swapping the operands (and their dtypes).
    let swapped = p.n > p.m;
    let p = p.oriented();
    let unsigned = DType::from_scalar_type(a.dtype())? == DType::U8;
    // SAFETY: checked shapes and dtypes; `out` is (m, n) int32.
    unsafe {
        match (unsigned, swapped) {
            (false, _) => execute(&p, &IntMm::<i8, i8>(std::marker::PhantomData)),
            (true, false) => execute(&p, &IntMm::<u8, i8>(std::marker::PhantomData)),
            (true, true) => execute(&p, &IntMm::<i8, u8>(std::marker::PhantomData)),
        }
    }
    Ok(())
}

/// `_int_mm`: the output allocated as CPU does (`self.size(0)`, `mat2.size(1)` first).
pub fn int_mm(a: TensorRef<'_>, b: TensorRef<'_>) -> Result<Tensor> {
    let shape = [size_at(&a, 0)?, size_at(&b, 1)?];
    let out = crate::engine::iter::new_tensor(&shape, DType::I32)?;
    int_mm_out(a, b, out.as_ref())?;
    Ok(out)
}

/// An 8-bit operand element, widened.
trait Byte: Copy + Sync {
    fn widen(self) -> i32;
}

impl Byte for i8 {
    #[inline(always)]
    fn widen(self) -> i32 {
        i32::from(self)
    }
}

impl Byte for u8 {
    #[inline(always)]
    fn widen(self) -> i32 {
        i32::from(self)
    }
}

/// int8/uint8 operands, int32 sums (exact below 2^17 of depth, wrapping as CPU's beyond).
struct IntMm<L, R>(std::marker::PhantomData<(L, R)>);

impl<L: Byte, R: Byte> Block for IntMm<L, R> {
    unsafe fn block(&self, p: &Problem, b: usize, rows: Range<usize>, _read: bool, _first: bool) {
        let mut acc = vec![0i32; p.n];
        for i in rows {
            acc.iter_mut().for_each(|x| *x = 0);
            for q in 0..p.k {
                // SAFETY: per the contract, (b, i, q) and (b, q, 0..n) lie inside the operands.
                let x = unsafe { *p.lhs.at::<L>(b, i, q) }.widen();
                if p.rhs.s[2] == 1 {
                    // SAFETY: as above, a row of n contiguous elements.
                    let row = unsafe { std::slice::from_raw_parts(p.rhs.at::<R>(b, q, 0), p.n) };
                    for (s, y) in acc.iter_mut().zip(row) {
                        *s = s.wrapping_add(x * y.widen());
                    }
                } else {
                    for (j, s) in acc.iter_mut().enumerate() {
                        // SAFETY: as above.
                        *s = s.wrapping_add(x * unsafe { *p.rhs.at::<R>(b, q, j) }.widen());
                    }
                }
            }
            for (j, s) in acc.iter().enumerate() {
                // SAFETY: (b, i, j) lies inside the output.
                unsafe { *p.out.at::<i32>(b, i, j) = *s };
            }
        }
    }
}

/// One dimension of a contraction: its size and its dimension in the output, the first and the
/// second operand (None where the tensor lacks it or broadcasts it). Dimensions the output lacks
/// are summed over.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    pub size: i64,
    pub dims: [Option<usize>; 3],
}

/// An axis as element strides of (output, lhs, rhs), 0 where a tensor lacks it.
#[derive(Clone, Copy, Debug)]
struct Span {
    size: usize,
    s: [isize; 3],
}

impl Span {
    const UNIT: Span = Span { size: 1, s: [0; 3] };
}

/// Merges neighbours that are one dimension in every tensor (outer first), as TensorIterator
/// coalesces, so folded batches become one GEMM dimension without copies.
fn coalesce(mut spans: Vec<Span>, key: usize) -> Vec<Span> {
    spans.sort_by_key(|a| std::cmp::Reverse(a.s[key].unsigned_abs()));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for b in spans {
        match out.last_mut() {
            Some(a) if (0..3).all(|t| a.s[t] == b.s[t] * b.size as isize) => {
                *a = Span { size: a.size * b.size, s: b.s };
            }
            _ => out.push(b),
        }
    }
    out
}

/// Takes the largest span out of `spans`.
fn take_largest(spans: &mut Vec<Span>) -> Option<Span> {
    let i = (0..spans.len()).max_by_key(|&i| spans[i].size)?;
    Some(spans.swap_remove(i))
}

/// Every index of `spans` (an odometer), as element offsets per tensor.
fn offsets(spans: &[Span]) -> Vec<[isize; 3]> {
    let mut all = vec![[0isize; 3]];
    for sp in spans {
        all = all
            .iter()
            .flat_map(|o| {
                (0..sp.size as isize).map(move |i| [o[0] + i * sp.s[0], o[1] + i * sp.s[1], o[2] + i * sp.s[2]])
            })
            .collect();
    }
    all
}

/// A new tensor of `shape` holding `Σ op(lhs) · op(rhs)` over `axes` (`conj` conjugates an
/// operand, on top of its own lazy conjugation). The axes become one batched GEMM per call of
/// the engine: dimensions of the output with the first operand only are its rows, with the
/// second only its columns, with both the batch; dimensions the output lacks are the depth.
/// Each group is coalesced; what does not fit one GEMM (a second depth dimension is the
/// engine's summed batch) loops outside, accumulating into the output.
pub fn contract(
    shape: &[i64],
    lhs: TensorRef<'_>,
    rhs: TensorRef<'_>,
    conj: [bool; 2],
    axes: &[Axis],
    kernel: &str,
) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(lhs.dtype())?;
    let out = crate::engine::iter::new_tensor(shape, dtype)?;
    if matches!(dtype, DType::F16 | DType::BF16) {
        // Accumulated in float32 and rounded once, as ATen's opmath.
        let (l, r) = (copy::dense(lhs, DType::F32)?, copy::dense(rhs, DType::F32)?);
        let wide = contract(shape, l.as_ref(), r.as_ref(), conj, axes, kernel)?;
        copy::copy_(out.as_ref(), wide.as_ref())?;
        return Ok(out);
    }
    if dtype == DType::Bool {
        return Err(Error::not_implemented(format!("\"{kernel}\" not implemented for '{}'", dtype.name())));
    }
    let o = out.as_ref();
    let stride = |t: &TensorRef<'_>, d: Option<usize>| d.map_or(0, |d| t.strides()[d] as isize);
    let spans: Vec<(Span, &Axis)> = axes
        .iter()
        .map(|a| {
            (
                Span {
                    size: a.size as usize,
                    s: [stride(&o, a.dims[0]), stride(&lhs, a.dims[1]), stride(&rhs, a.dims[2])],
                },
                a,
            )
        })
        .collect();
    if o.numel() == 0 {
        return Ok(out);
    }
    if spans.iter().any(|(s, _)| s.size == 0) {
        // An empty sum.
        // SAFETY: a fresh contiguous tensor of `numel` elements.
        unsafe { std::ptr::write_bytes(o.data_ptr().cast::<u8>(), 0, o.numel() as usize * dtype.size()) };
        return Ok(out);
    }
    let (mut batch, mut rows, mut cols, mut depth) = (vec![], vec![], vec![], vec![]);
    for (sp, a) in spans.into_iter().filter(|(s, _)| s.size > 1) {
        match (a.dims[0].is_some(), a.dims[1].is_some(), a.dims[2].is_some()) {
            (false, _, _) => depth.push(sp),
            (true, true, false) => rows.push(sp),
            (true, false, true) => cols.push(sp),
            _ => batch.push(sp),
        }
    }
    let (mut batch, mut rows, mut cols, mut depth) =
        (coalesce(batch, 0), coalesce(rows, 0), coalesce(cols, 0), coalesce(depth, 1));
    let (m, n, k) = (take_largest(&mut rows), take_largest(&mut cols), take_largest(&mut depth));
    let (m, n, k) = (m.unwrap_or(Span::UNIT), n.unwrap_or(Span::UNIT), k.unwrap_or(Span::UNIT));
    batch.append(&mut rows);
    batch.append(&mut cols);
    let summed = take_largest(&mut depth);
    let engine_batch = if summed.is_some() { summed } else { take_largest(&mut batch) };
    let eb = engine_batch.unwrap_or(Span::UNIT);
    let alpha = Num::Int(if lhs.is_neg() != rhs.is_neg() { -1 } else { 1 });
    let size = dtype.size() as isize;
    let ptrs = [o.data_ptr().cast::<u8>(), lhs.data_ptr().cast::<u8>(), rhs.data_ptr().cast::<u8>()];
    let sums = offsets(&depth);
    for kept in offsets(&batch) {
        for (i, d) in sums.iter().enumerate() {
            let at = |t: usize| ptrs[t].wrapping_offset((kept[t] + d[t]) * size);
            let p = Problem {
                batch: eb.size,
                m: m.size,
                n: n.size,
                k: k.size,
                out: Mat { ptr: at(0), s: [eb.s[0], m.s[0], n.s[0]] },
                lhs: Mat { ptr: at(1), s: [eb.s[1], m.s[1], k.s[1]] },
                rhs: Mat { ptr: at(2), s: [eb.s[2], k.s[2], n.s[2]] },
                conj_lhs: lhs.is_conj() != conj[0],
                conj_rhs: rhs.is_conj() != conj[1],
                sum_batches: summed.is_some(),
                read_out: i > 0,
                round: None,
            }
            .oriented();
            // SAFETY: the spans describe the live tensors' dimensions; each kept index writes
            // its own part of the fresh output.
            unsafe {
                crate::dispatch!(dtype, [F32, F64, C64, C128], |T| execute(&p, &Gemm::<T> { alpha: T::from_num(alpha), beta: T::one() }), else
                crate::dispatch!(dtype, [U8, I8, I16, I32, I64], |T| execute(&p, &Loop::<T> { alpha: T::from_num(alpha), beta: T::one() }), else ()))
            }
        }
    }
    Ok(out)
}

/// One batched product on operands another family built itself (convolution's unfolded
/// columns): `m × k` times `k × n`, each operand a pointer and `(batch, row, column)` element
/// strides.
pub(crate) struct Raw {
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub out: (*mut u8, [isize; 3]),
    pub lhs: (*mut u8, [isize; 3]),
    pub rhs: (*mut u8, [isize; 3]),
    /// The batch sums into one matrix (a weight gradient over the samples).
    pub sum_batches: bool,
    /// `out` is added to rather than overwritten.
    pub accumulate: bool,
}

/// `out[b] (+)= lhs[b] @ rhs[b]` on this engine's kernels and PyTorch's threads (nested inside
/// a parallel region, on the calling thread): gemm for real floats and complex, the wrapping
/// loop for integers. `kernel` names the op in the "not implemented" error of other dtypes.
///
/// # Safety
/// The pointers and strides describe live memory of `dtype`; `out` overlaps neither operand.
pub(crate) unsafe fn raw_product(dtype: DType, r: &Raw, kernel: &str) -> Result<()> {
    let mat = |(ptr, s): (*mut u8, [isize; 3])| Mat { ptr, s };
    let p = Problem {
        batch: r.batch,
        m: r.m,
        n: r.n,
        k: r.k,
        out: mat(r.out),
        lhs: mat(r.lhs),
        rhs: mat(r.rhs),
        conj_lhs: false,
        conj_rhs: false,
        sum_batches: r.sum_batches,
        read_out: r.accumulate,
        round: None,
    }
    .oriented();
    // SAFETY: per the contract.
    unsafe {
        crate::dispatch!(dtype, [F32, F64, C64, C128], |T| execute(&p, &Gemm::<T> { alpha: T::one(), beta: T::one() }), else
        crate::dispatch!(dtype, [U8, I8, I16, I32, I64], |T| execute(&p, &Loop::<T> { alpha: T::one(), beta: T::one() }), else
            return Err(Error::not_implemented(format!("\"{kernel}\" not implemented for '{}'", dtype.name())))))
    }
    Ok(())
}

/// matmul's broadcast of the batch dimensions (`infer_size`, with its message).
fn broadcast(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        check(x == y || x == 1 || y == 1, || {
            format!("The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}")
        })?;
        out[i] = if x == 1 { y } else { x };
    }
    Ok(out)
}

/// The dimension of `t` for batch dimension `i` of the broadcast `batch`, unless `t` lacks it
/// or broadcasts it.
fn batch_dim(t: &TensorRef<'_>, t_batch: usize, batch: &[i64], i: usize) -> Option<usize> {
    let lead = batch.len() - t_batch;
    (i >= lead && t.sizes()[i - lead] == batch[i]).then_some(i - lead)
}

/// matmul's size checks, with the messages of the op each case reaches on CPU (dot, mv, mm on
/// the folded batch, bmm after broadcasting).
fn check_matmul_sizes(ss: &[i64], so: &[i64]) -> Result<()> {
    let (ds, dother) = (ss.len(), so.len());
    let (k1, k2) = (ss[ds - 1], if dother > 1 { so[dother - 2] } else { so[0] });
    let mv = |rows: i64, k1: i64, k2: i64| {
        check(k1 == k2, || format!("size mismatch, got input ({rows}), mat ({rows}x{k1}), vec ({k2})"))
    };
    let mm = |rows: i64, k1: i64, k2: i64, cols: i64| {
        check(k1 == k2, || format!("mm: mat1 and mat2 shapes cannot be multiplied ({rows}x{k1} and {k2}x{cols})"))
    };
    let folded = |t: &[i64], keep: usize| t[..t.len() - keep].iter().product::<i64>();
    match (ds, dother) {
        (1, 1) => check(k1 == k2, || {
            format!(
                "inconsistent tensor size, expected tensor [{k1}] and src [{k2}] to have the same number of elements, but got {k1} and {k2} elements respectively"
            )
        }),
        (_, 1) if ds >= 2 => mv(folded(ss, 1), k1, k2),
        (1 | 2, _) if dother <= 2 => mm(if ds == 2 { ss[0] } else { 1 }, k1, k2, so[1]),
        // The larger operand folded into the rows of one product (transposed when it is other).
        (_, 2) => mm(folded(ss, 1), k1, k2, so[1]),
        (1, _) => mv(folded(so, 2) * so[dother - 1], k2, k1),
        (2, _) => mm(folded(so, 2) * so[dother - 1], k2, k1, ss[0]),
        _ => {
            let batch = broadcast(&ss[..ds - 2], &so[..dother - 2])?;
            let b: i64 = batch.iter().product();
            check(k1 == k2, || {
                format!(
                    "Expected size for first two dimensions of batch2 tensor to be: [{b}, {k1}] but got: [{b}, {k2}]."
                )
            })
        }
    }
}

fn undefined_pair() -> (Tensor, Tensor) {
    (Tensor::undefined(), Tensor::undefined())
}

/// `matmul_backward`: the gradients of `matmul(self, other)` that `mask` asks for, each the
/// contraction of `grad` with the other operand's conjugate, summed over the batch dimensions
/// its operand broadcasts (the gradients CPU's autograd computes through matmul's mm/bmm).
pub fn matmul_backward(
    grad: TensorRef<'_>,
    s: TensorRef<'_>,
    o: TensorRef<'_>,
    mask: &[bool],
) -> Result<(Tensor, Tensor)> {
    if !grad.is_defined() {
        return Ok(undefined_pair());
    }
    let (ds, dother) = (s.dim(), o.dim());
    check(ds != 0 && dother != 0, || {
        format!("both arguments to matmul need to be at least 1D, but they are {ds}D and {dother}D")
    })?;
    let (ss, so) = (s.sizes(), o.sizes());
    let n = (ds > 1).then(|| ss[ds - 2]);
    let p = (dother > 1).then(|| so[dother - 1]);
    let k1 = ss[ds - 1];
    let (bs, bo) = (ds.saturating_sub(2), dother.saturating_sub(2));
    check_matmul_sizes(ss, so)?;
    check(s.dtype() == o.dtype(), || {
        format!("expected m1 and m2 to have the same dtype, but got: {} != {}", cpp_name(&s), cpp_name(&o))
    })?;
    let batch = broadcast(&ss[..bs], &so[..bo])?;
    let nb = batch.len();
    let mut shape = batch.clone();
    shape.extend(n.iter().chain(p.iter()));
    check(grad.sizes() == shape.as_slice(), || {
        format!("matmul_backward: expected grad of the product's shape {shape:?}, but got {:?}", grad.sizes())
    })?;
    check(grad.dtype() == s.dtype(), || {
        format!("matmul_backward: expected grad of dtype {}, but got {}", name(&s), name(&grad))
    })?;
    // Dimensions of grad: the batch, then n (self a matrix), then p (other a matrix).
    let (gn, gp) = (n.map(|_| nb), p.map(|_| nb + usize::from(n.is_some())));
    let k_other = if dother > 1 { dother - 2 } else { 0 };
    let grad_self = if mask.first() == Some(&true) {
        // grad_self[.., n, k] = Σ grad[.., n, p] · conj(other[.., k, p])
        let mut axes: Vec<Axis> = (0..nb)
            .map(|i| Axis {
                size: batch[i],
                dims: [batch_dim(&s, bs, &batch, i), Some(i), batch_dim(&o, bo, &batch, i)],
            })
            .collect();
        if let Some(n) = n {
            axes.push(Axis { size: n, dims: [Some(ds - 2), gn, None] });
        }
        axes.push(Axis { size: k1, dims: [Some(ds - 1), None, Some(k_other)] });
        if let Some(p) = p {
            axes.push(Axis { size: p, dims: [None, gp, Some(dother - 1)] });
        }
        contract(ss, grad, o, [false, true], &axes, "matmul_backward")?
    } else {
        Tensor::undefined()
    };
    let grad_other = if mask.get(1) == Some(&true) {
        // grad_other[.., k, p] = Σ conj(self[.., n, k]) · grad[.., n, p]
        let mut axes: Vec<Axis> = (0..nb)
            .map(|i| Axis {
                size: batch[i],
                dims: [batch_dim(&o, bo, &batch, i), batch_dim(&s, bs, &batch, i), Some(i)],
            })
            .collect();
        axes.push(Axis { size: k1, dims: [Some(k_other), Some(ds - 1), None] });
        if let Some(p) = p {
            axes.push(Axis { size: p, dims: [Some(dother - 1), None, gp] });
        }
        if let Some(n) = n {
            axes.push(Axis { size: n, dims: [None, Some(ds - 2), gn] });
        }
        contract(so, s, grad, [true, false], &axes, "matmul_backward")?
    } else {
        Tensor::undefined()
    };
    Ok((grad_self, grad_other))
}

/// `linear_backward`: for `linear(input, weight)` (weight `out × in`, or a vector `in`), the
/// gradients `mask` asks for: input's `grad · conj(weight)`, weight's `gradᵀ · conj(input)` summed
/// over input's leading dimensions, and bias's sum of grad over them (as the gradients CPU's
/// autograd computes through linear's addmm/matmul). An unrequested gradient is undefined.
pub fn linear_backward(
    input: TensorRef<'_>,
    grad: TensorRef<'_>,
    weight: TensorRef<'_>,
    mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    if !grad.is_defined() {
        return Ok((Tensor::undefined(), Tensor::undefined(), Tensor::undefined()));
    }
    let (di, dw) = (input.dim(), weight.dim());
    check(di != 0 && dw != 0, || {
        format!("both arguments to linear need to be at least 1D, but they are {di}D and {dw}D")
    })?;
    check(dw <= 2, || format!("t() expects a tensor with <= 2 dimensions, but self is {dw}D"))?;
    let (si, sw) = (input.sizes(), weight.sizes());
    let features = si[di - 1];
    let lead = &si[..di - 1];
    let outs = (dw == 2).then(|| sw[0]);
    check(features == sw[dw - 1], || {
        format!(
            "mm: mat1 and mat2 shapes cannot be multiplied ({}x{features} and {}x{})",
            lead.iter().product::<i64>(),
            sw[dw - 1],
            outs.unwrap_or(1)
        )
    })?;
    check(input.dtype() == weight.dtype(), || {
        format!("expected m1 and m2 to have the same dtype, but got: {} != {}", cpp_name(&input), cpp_name(&weight))
    })?;
    let mut shape = lead.to_vec();
    shape.extend(outs);
    check(grad.sizes() == shape.as_slice(), || {
        format!("linear_backward: expected grad_output of the output's shape {shape:?}, but got {:?}", grad.sizes())
    })?;
    check(grad.dtype() == input.dtype(), || {
        format!("linear_backward: expected grad_output of dtype {}, but got {}", name(&input), name(&grad))
    })?;
    let nl = lead.len();
    let go = outs.map(|_| nl);
    let want = |i: usize| mask.get(i) == Some(&true);
    let grad_input = if want(0) {
        // grad_input[.., i] = Σ_o grad[.., o] · conj(weight[o, i])
        let mut axes: Vec<Axis> = (0..nl).map(|d| Axis { size: lead[d], dims: [Some(d), Some(d), None] }).collect();
        axes.push(Axis { size: features, dims: [Some(di - 1), None, Some(dw - 1)] });
        if let Some(o) = outs {
            axes.push(Axis { size: o, dims: [None, go, Some(0)] });
        }
        contract(si, grad, weight, [false, true], &axes, "linear_backward")?
    } else {
        Tensor::undefined()
    };
    let grad_weight = if want(1) {
        // grad_weight[o, i] = Σ_.. grad[.., o] · conj(input[.., i])
        let mut axes: Vec<Axis> = (0..nl).map(|d| Axis { size: lead[d], dims: [None, Some(d), Some(d)] }).collect();
        if let Some(o) = outs {
            axes.push(Axis { size: o, dims: [Some(0), go, None] });
        }
        axes.push(Axis { size: features, dims: [Some(dw - 1), None, Some(di - 1)] });
        contract(sw, grad, input, [false, true], &axes, "linear_backward")?
    } else {
        Tensor::undefined()
    };
    let grad_bias = if want(2) {
        use crate::ops::reduce as r;
        let dtype = DType::from_scalar_type(grad.dtype())?;
        let out = crate::engine::iter::new_tensor(&shape[nl..], dtype)?;
        let reduced: Vec<bool> = (0..grad.dim()).map(|d| d < nl).collect();
        r::reduce_into(&r::Sum::<false, false>, grad, dtype, &reduced, false, &[out.as_ref()])?;
        out
    } else {
        Tensor::undefined()
    };
    Ok((grad_input, grad_weight, grad_bias))
}

/// This family's kernels: group `matmul` of regen.toml's `[implement]`.
impl crate::MatmulKernels for crate::Reference {
    fn mm_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        run(&MM, None, self_, mat2, regen_runtime::Scalar::Int(1), out)
    }

    fn addmm_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat1: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        run(&MM, Some((self_, beta)), mat1, mat2, alpha, out)
    }

    fn _addmm_activation_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat1: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        use_gelu: bool,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        // As ATen's CPU kernel: addmm, then the exact gelu or relu in place.
        run_then(&MM, Some((self_, beta)), mat1, mat2, alpha, out, |o| {
            if use_gelu { crate::ops::pointwise::gelu(o, "none", o) } else { crate::ops::unary::relu(o, o) }
        })
    }

    fn bmm_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        run(&BMM, None, self_, mat2, regen_runtime::Scalar::Int(1), out)
    }

    fn baddbmm_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        batch1: regen_runtime::TensorRef<'_>,
        batch2: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        run(&BMM, Some((self_, beta)), batch1, batch2, alpha, out)
    }

    fn addbmm_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        batch1: regen_runtime::TensorRef<'_>,
        batch2: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        run(&ADDBMM, Some((self_, beta)), batch1, batch2, alpha, out)
    }

    fn addbmm(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        batch1: regen_runtime::TensorRef<'_>,
        batch2: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], self_.dtype().0)?;
        self.addbmm_out(self_, batch1, batch2, beta, alpha, out.as_ref())?;
        Ok(out)
    }

    fn addbmm_inplace(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        batch1: regen_runtime::TensorRef<'_>,
        batch2: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
    ) -> regen_runtime::Result<()> {
        self.addbmm_out(self_, batch1, batch2, beta, alpha, self_)
    }

    fn addmv_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat: regen_runtime::TensorRef<'_>,
        vec: regen_runtime::TensorRef<'_>,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        run(&ADDMV, Some((self_, beta)), mat, vec, alpha, out)
    }

    #[cfg(regen_has_op = "mm.dtype_out")]
    fn mm_dtype_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        let one = regen_runtime::Scalar::Int(1);
        run_dtype(&MM, None, self_, mat2, one, out_dtype, out)
    }

    #[cfg(regen_has_op = "mm.dtype")]
    fn mm_dtype(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], out_dtype.0)?;
        self.mm_dtype_out(self_, mat2, out_dtype, out.as_ref())?;
        Ok(out)
    }

    #[cfg(regen_has_op = "bmm.dtype_out")]
    fn bmm_dtype_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        let one = regen_runtime::Scalar::Int(1);
        run_dtype(&BMM, None, self_, mat2, one, out_dtype, out)
    }

    #[cfg(regen_has_op = "bmm.dtype")]
    fn bmm_dtype(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], out_dtype.0)?;
        self.bmm_dtype_out(self_, mat2, out_dtype, out.as_ref())?;
        Ok(out)
    }

    #[cfg(regen_has_op = "addmm.dtype_out")]
    fn addmm_dtype_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat1: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        let bias = Some((self_, beta));
        run_dtype(&MM, bias, mat1, mat2, alpha, out_dtype, out)
    }

    #[cfg(regen_has_op = "addmm.dtype")]
    fn addmm_dtype(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat1: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], out_dtype.0)?;
        self.addmm_dtype_out(self_, mat1, mat2, out_dtype, beta, alpha, out.as_ref())?;
        Ok(out)
    }

    #[cfg(regen_has_op = "baddbmm.dtype_out")]
    fn baddbmm_dtype_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        batch1: regen_runtime::TensorRef<'_>,
        batch2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        let bias = Some((self_, beta));
        run_dtype(&BMM, bias, batch1, batch2, alpha, out_dtype, out)
    }

    #[cfg(regen_has_op = "baddbmm.dtype")]
    fn baddbmm_dtype(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        batch1: regen_runtime::TensorRef<'_>,
        batch2: regen_runtime::TensorRef<'_>,
        out_dtype: regen_runtime::ScalarType,
        beta: regen_runtime::Scalar,
        alpha: regen_runtime::Scalar,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], out_dtype.0)?;
        self.baddbmm_dtype_out(self_, batch1, batch2, out_dtype, beta, alpha, out.as_ref())?;
        Ok(out)
    }

    fn matmul_backward(
        &self,
        grad: regen_runtime::TensorRef<'_>,
        self_: regen_runtime::TensorRef<'_>,
        other: regen_runtime::TensorRef<'_>,
        mask: &[bool],
    ) -> regen_runtime::Result<(regen_runtime::Tensor, regen_runtime::Tensor)> {
        matmul_backward(grad, self_, other, mask)
    }

    fn linear_backward(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        grad_output: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        output_mask: &[bool],
    ) -> regen_runtime::Result<(regen_runtime::Tensor, regen_runtime::Tensor, regen_runtime::Tensor)> {
        linear_backward(self_, grad_output, weight, output_mask)
    }

    fn _int_mm(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        int_mm(self_, mat2)
    }

    fn _int_mm_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        mat2: regen_runtime::TensorRef<'_>,
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        int_mm_out(self_, mat2, out)
    }

    fn dot(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        tensor: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        dot(&DOT, self_, tensor)
    }

    fn vdot(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        other: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        dot(&VDOT, self_, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    /// A `rows × cols` operand over `data` with the given element strides, batch stride 0.
    fn mat<T>(data: &mut [T], rs: isize, cs: isize) -> Mat {
        Mat { ptr: data.as_mut_ptr().cast(), s: [0, rs, cs] }
    }

    fn problem(m: usize, n: usize, k: usize, out: Mat, lhs: Mat, rhs: Mat, read_out: bool) -> Problem {
        Problem {
            batch: 1,
            m,
            n,
            k,
            out,
            lhs,
            rhs,
            conj_lhs: false,
            conj_rhs: false,
            sum_batches: false,
            read_out,
            round: None,
        }
    }

    #[test]
    fn strided_f64_products_match_a_naive_reference() {
        // lhs transposed (column-major), rhs every other column, out row-major, beta·out read.
        let (m, n, k) = (70usize, 45usize, 130usize);
        let mut a: Vec<f64> = (0..m * k).map(|i| ((i * 7919) % 97) as f64 / 13.0 - 3.0).collect();
        let mut b: Vec<f64> = (0..k * 2 * n).map(|i| ((i * 104729) % 89) as f64 / 11.0 - 4.0).collect();
        let mut out: Vec<f64> = (0..m * n).map(|i| i as f64).collect();
        let before = out.clone();
        let p = problem(
            m,
            n,
            k,
            mat(&mut out, n as isize, 1),
            mat(&mut a, 1, m as isize),
            mat(&mut b, 2 * n as isize, 2),
            true,
        );
        // SAFETY: the problem describes the local vectors.
        unsafe { execute(&p, &Gemm::<f64> { alpha: 2.0, beta: 0.5 }) };
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|q| a[q * m + i] * b[q * 2 * n + 2 * j]).sum();
                let expected = 0.5 * before[i * n + j] + 2.0 * dot;
                assert!((out[i * n + j] - expected).abs() < 1e-9 * expected.abs().max(1.0), "{i},{j}");
            }
        }
    }

    #[test]
    fn conjugate_flags_and_integer_wrapping() {
        let mut a = [Complex64::new(1.0, 2.0), Complex64::new(3.0, -1.0)];
        let mut b = [Complex64::new(0.5, 1.0), Complex64::new(-2.0, 1.0)];
        let mut out = [Complex64::new(0.0, 0.0)];
        let mut p = problem(1, 1, 2, mat(&mut out, 0, 0), mat(&mut a, 0, 1), mat(&mut b, 1, 0), false);
        p.conj_lhs = true;
        let one = Complex64::new(1.0, 0.0);
        // SAFETY: as above.
        unsafe { execute(&p, &Gemm::<Complex64> { alpha: one, beta: one }) };
        let expected = a[0].conj() * b[0] + a[1].conj() * b[1];
        assert!((out[0] - expected).norm() < 1e-12);
        // The simple loop (small batched products) conjugates the same way.
        // SAFETY: as above.
        unsafe { execute(&p, &Loop::<Complex64> { alpha: one, beta: one }) };
        assert_eq!(out[0], expected);

        let mut x = [100i8; 40];
        let mut y = [7i8; 40];
        let mut r = [0i8];
        let p = problem(1, 1, 40, mat(&mut r, 0, 0), mat(&mut x, 0, 1), mat(&mut y, 1, 0), false);
        // SAFETY: as above.
        unsafe { execute(&p, &Loop::<i8> { alpha: 1, beta: 0 }) };
        assert_eq!(r[0], (100i64 * 7 * 40) as i8);
    }

    #[test]
    fn fused_kernel_sums_in_depth_order_then_scales() {
        // 1 + 2^-23 squared needs the fused rounding: the unfused product loses the 2^-46 term.
        let e = f32::EPSILON;
        let mut a = [1.0f32, 1.0 + e];
        let mut b = [-(1.0 + 2.0 * e), 1.0 + e];
        let mut out = [3.0f32, 0.0];
        let p = problem(1, 1, 2, mat(&mut out, 0, 0), mat(&mut a, 0, 1), mat(&mut b, 1, 0), true);
        // SAFETY: the problem describes the local arrays.
        unsafe { execute(&p, &Fused::<f32> { alpha: 0.5, beta: 2.0 }) };
        let sum = (1.0 + e).mul_add(1.0 + e, 1.0f32.mul_add(-(1.0 + 2.0 * e), 0.0));
        assert_eq!(sum, e * e);
        assert_eq!(out[0], 2.0f32.mul_add(3.0, 0.5 * sum));
        // From 0 with beta 0: the scaled sum alone.
        let p = problem(1, 1, 2, mat(&mut out[1..], 0, 0), mat(&mut a, 0, 1), mat(&mut b, 1, 0), false);
        // SAFETY: as above.
        unsafe { execute(&p, &Fused::<f32> { alpha: 0.5, beta: 0.0 }) };
        assert_eq!(out[1], 0.5 * e * e);
    }

    #[test]
    fn int_mm_widens_bytes_into_int32() {
        let mut a = [200u8; 40];
        let mut b = [-3i8; 40];
        let mut out = [0i32];
        let p = problem(1, 1, 40, mat(&mut out, 0, 0), mat(&mut a, 0, 1), mat(&mut b, 1, 0), false);
        // SAFETY: as above.
        unsafe { execute(&p, &IntMm::<u8, i8>(std::marker::PhantomData)) };
        assert_eq!(out[0], -24000);
    }

    #[test]
    fn coalescing_folds_batches_into_one_dimension() {
        // Rows (2, 3) of a contiguous (2, 3, 4) operand and output: one run of 6 rows. A sliced
        // outer dimension (stride 24 instead of 12) stays apart.
        let rows = vec![Span { size: 2, s: [12, 12, 0] }, Span { size: 3, s: [4, 4, 0] }];
        let merged = coalesce(rows, 0);
        assert_eq!(merged.len(), 1);
        assert_eq!((merged[0].size, merged[0].s), (6, [4, 4, 0]));
        let sliced = vec![Span { size: 3, s: [4, 4, 0] }, Span { size: 2, s: [12, 24, 0] }];
        assert_eq!(coalesce(sliced, 0).len(), 2);
        let offs = offsets(&[Span { size: 2, s: [1, 10, 0] }, Span { size: 3, s: [0, 1, 5] }]);
        assert_eq!(offs.len(), 6);
        assert_eq!(offs[5], [1, 12, 10]);
    }

    #[test]
    fn summed_batches_and_empty_depth() {
        // addbmm over 3 batches of 2×2 @ 2×1, then k = 0 (beta·out only).
        let mut a: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let mut b: Vec<f32> = (0..6).map(|i| 1.0 + i as f32).collect();
        let mut out = [1.0f32, 1.0];
        let p = Problem {
            batch: 3,
            m: 2,
            n: 1,
            k: 2,
            out: Mat { ptr: out.as_mut_ptr().cast(), s: [0, 1, 0] },
            lhs: Mat { ptr: a.as_mut_ptr().cast(), s: [4, 2, 1] },
            rhs: Mat { ptr: b.as_mut_ptr().cast(), s: [2, 1, 0] },
            conj_lhs: false,
            conj_rhs: false,
            sum_batches: true,
            read_out: true,
            round: None,
        };
        // SAFETY: as above.
        unsafe { execute(&p, &Gemm::<f32> { alpha: 1.0, beta: 10.0 }) };
        let row = |i: usize| -> f32 {
            (0..3).map(|t| a[t * 4 + i * 2] * b[t * 2] + a[t * 4 + i * 2 + 1] * b[t * 2 + 1]).sum()
        };
        assert_eq!(out, [10.0 + row(0), 10.0 + row(1)]);
        let p = Problem { k: 0, batch: 1, ..p };
        // SAFETY: as above (nothing of lhs or rhs is read).
        unsafe { execute(&p, &Gemm::<f32> { alpha: 1.0, beta: 2.0 }) };
        assert_eq!(out, [2.0 * (10.0 + row(0)), 2.0 * (10.0 + row(1))]);
    }
}
