//! Shape, copy and factory ops. The data-movement ops (cat, flip, roll, narrow_copy, tril/triu,
//! unfold_backward) describe their work as strided copies between views — a `Piece` each: a
//! source view (negative strides for flip, an offset for narrow) and a destination view of the
//! output — and [`crate::ops::copy::copy_same`] moves the bits (memcpy, tiled transpose or
//! a strided loop), so no op has a loop of its own. The factories (arange, range, linspace,
//! logspace, eye, tril_indices) write sequences with ATen's arithmetic, rounding included.

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Scalar, ScalarType, Tensor, TensorList, TensorRef};

use crate::engine::dtype::{
    DType, Element, Num, PromotionOperand, can_cast, check_out_dtype, not_implemented, result_type,
};
use crate::engine::iter::{Dims, GRAIN, Operand, new_tensor};
use crate::engine::loops::copy_cast;
use crate::engine::operands::{Input, new_output};
use crate::ops::copy::{copy_, copy_same};

/// A view of a tensor's memory in elements: `offset` elements from its first element.
fn view(o: &Operand, offset: i64, sizes: &[i64], strides: &[i64]) -> Operand {
    Operand {
        // SAFETY (of later use): callers keep the view inside the operand.
        data: o.data.wrapping_offset(offset as isize * o.dtype.size() as isize),
        dtype: o.dtype,
        sizes: Dims::from_slice(sizes),
        strides: Dims::from_slice(strides),
    }
}

/// One step of a data-movement op: copy `src` into `dst` (same shape).
struct Piece {
    src: Operand,
    dst: Operand,
}

/// Runs the pieces of an op, converting dtypes where the source's differs (cat of mixed dtypes).
fn run(pieces: &[Piece]) {
    for p in pieces {
        // SAFETY: every piece's views lie inside live tensors of the op call, and an op's
        // destinations do not overlap its sources.
        unsafe { if p.src.dtype == p.dst.dtype { copy_same(&p.src, &p.dst) } else { copy_cast(&p.src, &p.dst) } }
    }
}

pub use crate::engine::iter::wrap_dim;

// ---------------------------------------------------------------------------------------------
// Data movement.

/// `torch.cat(tensors, dim, out=out)`: ATen's `cat` meta and CPU kernel. Legacy empty 1-D
/// tensors (`torch.empty(0)`) are skipped; inputs of several dtypes are promoted and converted.
pub fn cat(tensors: TensorList<'_>, dim: i64, out: TensorRef<'_>) -> Result<()> {
    let ts: Vec<TensorRef<'_>> = tensors.iter().collect();
    if ts.is_empty() {
        return Err(Error::value("torch.cat(): expected a non-empty list of Tensors"));
    }
    if let Some(i) = ts.iter().position(|t| t.dim() == 0) {
        return Err(Error::runtime(format!("zero-dimensional tensor (at position {i}) cannot be concatenated")));
    }
    let skip = |t: &TensorRef<'_>| t.dim() == 1 && t.sizes()[0] == 0;
    let valid = ts.iter().position(|t| !skip(t));
    let dim = match valid {
        Some(v) => wrap_dim(dim, ts[v].dim())?,
        None => 0,
    };
    let promotion: Vec<PromotionOperand> = ts
        .iter()
        .map(|t| {
            Ok(PromotionOperand { dtype: DType::from_scalar_type(t.dtype())?, dim: t.dim(), wrapped_number: false })
        })
        .collect::<Result<_>>()?;
    let common = result_type(&promotion).unwrap_or(DType::DEFAULT_FLOAT);
    let out_dtype = DType::from_scalar_type(out.dtype())?;
    if !can_cast(common, out_dtype) {
        return Err(Error::runtime(format!(
            "torch.cat(): input types can't be cast to the desired output type {}",
            out_dtype.name()
        )));
    }
    let mut sizes = vec![0i64];
    if let Some(v) = valid {
        let first = &ts[v];
        sizes = first.sizes().to_vec();
        let mut total = 0;
        for (i, t) in ts.iter().enumerate() {
            if skip(t) {
                continue;
            }
            if t.dim() != first.dim() {
                return Err(Error::runtime(format!(
                    "Tensors must have same number of dimensions: got {} and {}",
                    first.dim(),
                    t.dim()
                )));
            }
            for d in 0..t.dim() {
                if d != dim && t.sizes()[d] != first.sizes()[d] {
                    return Err(Error::runtime(format!(
                        "Sizes of tensors must match except in dimension {dim}. Expected size {} but got size {} for tensor number {i} in the list.",
                        first.sizes()[d],
                        t.sizes()[d]
                    )));
                }
            }
            total += t.sizes()[dim];
        }
        sizes[dim] = total;
    }
    with_size(&out, &sizes, |out| {
        let o = Operand::of(out)?;
        let mut pieces = Vec::with_capacity(ts.len());
        let mut at = 0i64;
        for t in ts.iter().filter(|t| !skip(t)) {
            let n = t.sizes()[dim];
            let mut s = sizes.clone();
            s[dim] = n;
            pieces.push(Piece { src: Operand::of(t)?, dst: view(&o, at * o.strides[dim], &s, &o.strides) });
            at += n;
        }
        run(&pieces);
        Ok(())
    })
}

/// `torch.flip(self, dims)`: the input seen through negative strides, copied.
pub fn flip(t: TensorRef<'_>, dims: &[i64]) -> Result<Tensor> {
    let mut flipped = vec![false; t.dim().max(1)];
    for &d in dims {
        let w = wrap_dim(d, t.dim())?;
        if flipped[w] {
            return Err(Error::runtime(format!("dim {w} appears multiple times in the list of dims")));
        }
        flipped[w] = true;
    }
    let dtype = DType::from_scalar_type(t.dtype())?;
    let out = new_output(dtype, &[Input::Tensor(t)])?;
    let src = Operand::of(&t)?;
    let mut strides = src.strides.to_vec();
    let mut offset = 0;
    for d in 0..t.dim() {
        if flipped[d] && src.sizes[d] > 0 {
            offset += (src.sizes[d] - 1) * strides[d];
            strides[d] = -strides[d];
        }
    }
    run(&[Piece { src: view(&src, offset, &src.sizes, &strides), dst: Operand::of(&out.as_ref())? }]);
    Ok(out)
}

/// `torch.roll(self, shifts, dims)`: per rolled dimension the two halves swap places, so the
/// output is 2^k block copies of the input (k rolled dimensions). Without dims the flattened
/// tensor rolls.
pub fn roll(t: TensorRef<'_>, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if shifts.is_empty() {
        return Err(Error::runtime("`shifts` required"));
    }
    let dtype = DType::from_scalar_type(t.dtype())?;
    let out = new_tensor(t.sizes(), dtype)?;
    if dims.is_empty() && shifts.len() == 1 {
        // The flattened tensor: a contiguous copy (the output itself is scratch first).
        let n = t.numel();
        if n == 0 {
            return Ok(out);
        }
        let dense = new_tensor(t.sizes(), dtype)?;
        copy_(dense.as_ref(), t)?;
        let src = view(&Operand::of(&dense.as_ref())?, 0, &[n], &[1]);
        let dst = Operand::of(&out.as_ref())?;
        let dst = view(&dst, 0, &[n], &[1]);
        run(&roll_pieces(&src, &dst, &[(0, shifts[0])]));
        return Ok(out);
    }
    if shifts.len() != dims.len() {
        return Err(Error::runtime(format!(
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        )));
    }
    let mut rolls: Vec<(usize, i64)> = Vec::new();
    for (&s, &d) in shifts.iter().zip(dims) {
        if t.dim() == 0 {
            return Err(Error::index(format!("Dimension specified as {d} but tensor has no dimensions")));
        }
        let d = wrap_dim(d, t.dim())?;
        match rolls.iter_mut().find(|(e, _)| *e == d) {
            Some(r) => r.1 = r.1.wrapping_add(s),
            None => rolls.push((d, s)),
        }
    }
    if t.numel() == 0 {
        return Ok(out);
    }
    run(&roll_pieces(&Operand::of(&t)?, &Operand::of(&out.as_ref())?, &rolls));
    Ok(out)
}

/// The block copies of a roll: for each rolled dimension, source `[start, n)` goes to
/// `[0, n - start)` and source `[0, start)` to `[n - start, n)`.
fn roll_pieces(src: &Operand, dst: &Operand, rolls: &[(usize, i64)]) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for mask in 0..1usize << rolls.len() {
        let mut sizes = src.sizes.to_vec();
        let (mut so, mut d_o) = (0i64, 0i64);
        for (k, &(d, shift)) in rolls.iter().enumerate() {
            let n = src.sizes[d];
            let start = (n - shift.rem_euclid(n)) % n;
            let (from, to, len) = if mask >> k & 1 == 0 { (start, 0, n - start) } else { (0, n - start, start) };
            sizes[d] = len;
            so += from * src.strides[d];
            d_o += to * dst.strides[d];
        }
        if sizes.contains(&0) {
            continue;
        }
        pieces.push(Piece { src: view(src, so, &sizes, &src.strides), dst: view(dst, d_o, &sizes, &dst.strides) });
    }
    pieces
}

/// `torch.tril` / `torch.triu` into `out`: the input copied, then the other triangle zeroed
/// (zero bits are zero in every dtype).
pub fn triangle(t: TensorRef<'_>, diagonal: i64, out: TensorRef<'_>, lower: bool) -> Result<()> {
    let name = if lower { "tril" } else { "triu" };
    if t.dim() < 2 {
        return Err(Error::runtime(format!("{name}: input tensor must have at least 2 dimensions")));
    }
    let dtype = DType::from_scalar_type(t.dtype())?;
    check_out_dtype(&out, dtype)?;
    with_size(&out, t.sizes(), |out| {
        copy_(*out, t)?;
        let o = Operand::of(out)?;
        let nd = o.sizes.len();
        let (rows, cols) = (o.sizes[nd - 2], o.sizes[nd - 1]);
        let (rs, cs) = (o.strides[nd - 2], o.strides[nd - 1]);
        let e = dtype.size() as isize;
        let batch: i64 = o.sizes[..nd - 2].iter().product();
        for b in 0..batch {
            // The batch element's offset, outer dimensions in row-major order.
            let (mut rest, mut base) = (b, 0i64);
            for d in (0..nd - 2).rev() {
                base += rest % o.sizes[d] * o.strides[d];
                rest /= o.sizes[d];
            }
            for i in 0..rows {
                let (j0, j1) =
                    if lower { ((i + diagonal + 1).clamp(0, cols), cols) } else { (0, (i + diagonal).clamp(0, cols)) };
                let row = base + i * rs;
                if cs == 1 {
                    // SAFETY: columns j0..j1 of row i are inside `out`.
                    unsafe {
                        std::ptr::write_bytes(
                            o.data.offset((row + j0) as isize * e),
                            0,
                            ((j1 - j0).max(0) as isize * e) as usize,
                        )
                    };
                } else {
                    for j in j0..j1 {
                        // SAFETY: as above.
                        unsafe { std::ptr::write_bytes(o.data.offset((row + j * cs) as isize * e), 0, e as usize) };
                    }
                }
            }
        }
        Ok(())
    })
}

/// `torch.narrow_copy(self, dim, start, length, out=out)`.
pub fn narrow_copy(t: TensorRef<'_>, dim: i64, start: i64, length: i64, out: TensorRef<'_>) -> Result<()> {
    if t.dim() == 0 {
        return Err(Error::runtime("narrow() cannot be applied to a 0-dim tensor."));
    }
    let dtype = DType::from_scalar_type(t.dtype())?;
    check_out_dtype(&out, dtype)?;
    let d = if dim < 0 {
        wrap_dim(dim, t.dim())?
    } else if (dim as usize) < t.dim() {
        dim as usize
    } else {
        return Err(Error::runtime(
            "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
        ));
    };
    let n = t.sizes()[d];
    if !(-n..=n).contains(&start) {
        return Err(Error::index(format!(
            "start out of range (expected to be in range of [{}, {n}], but got {start})",
            -n
        )));
    }
    let start = if start < 0 { start + n } else { start };
    if length < 0 || start > n - length {
        return Err(Error::runtime(format!("start ({start}) + length ({length}) exceeds dimension size ({n}).")));
    }
    let mut sizes = t.sizes().to_vec();
    sizes[d] = length;
    with_size(&out, &sizes, |out| {
        let s = Operand::of(&t)?;
        run(&[Piece { src: view(&s, start * s.strides[d], &sizes, &s.strides), dst: Operand::of(out)? }]);
        Ok(())
    })
}

/// `Tensor.unfold(dimension, size, step)`: a view with the windows as a new last dimension.
pub fn unfold(t: TensorRef<'_>, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    let nd = t.dim();
    let d = wrap_dim(dimension, nd)?;
    let mut sizes = t.sizes().to_vec();
    let mut strides = t.strides().to_vec();
    let max_size = if nd == 0 { 1 } else { sizes[d] };
    if size > max_size {
        return Err(Error::runtime(format!(
            "maximum size for tensor at dimension {d} is {max_size} but size is {size}"
        )));
    }
    if size < 0 {
        return Err(Error::runtime(format!("size is {size} but must be >= 0")));
    }
    if step <= 0 {
        return Err(Error::runtime(format!("step is {step} but must be > 0")));
    }
    sizes.push(size);
    strides.push(if nd == 0 { 1 } else { strides[d] });
    if d < nd {
        sizes[d] = (sizes[d] - size) / step + 1;
        strides[d] *= step;
    }
    regen_runtime::host::as_strided(&t, &sizes, &strides, t.storage_offset())
}

/// `unfold_backward`: the gradient of every window added into a zeroed tensor of the input's
/// shape; for each position `k` in a window the windows do not overlap, so it is one strided add
/// (or, without overlap at all, one copy).
pub fn unfold_backward(grad: TensorRef<'_>, input_sizes: &[i64], dim: i64, size: i64, step: i64) -> Result<Tensor> {
    let d = wrap_dim(dim, input_sizes.len())?;
    let dtype = DType::from_scalar_type(grad.dtype())?;
    let out = new_tensor(input_sizes, dtype)?;
    let o = Operand::of(&out.as_ref())?;
    // SAFETY: a fresh contiguous tensor of `numel` elements.
    unsafe { std::ptr::write_bytes(o.data, 0, o.numel() * dtype.size()) };
    let nd = input_sizes.len();
    let windows = grad.sizes().get(d).copied().unwrap_or(1);
    let (stride_d, mut sizes, mut strides) = if nd == 0 {
        (1, vec![], vec![])
    } else {
        let mut st = o.strides.to_vec();
        let s = st[d];
        st[d] = s * step;
        let mut sz = input_sizes.to_vec();
        sz[d] = windows;
        (s, sz, st)
    };
    if nd == 0 {
        sizes.clear();
        strides.clear();
    }
    let gs = grad.strides();
    let last = gs.len() - 1;
    for k in 0..size {
        let dst = regen_runtime::host::as_strided(&out.as_ref(), &sizes, &strides, k * stride_d)?;
        let src = regen_runtime::host::as_strided(
            &grad,
            &grad.sizes()[..last],
            &gs[..last],
            grad.storage_offset() + k * gs[last],
        )?;
        if step >= size {
            copy_(dst.as_ref(), src.as_ref())?;
        } else {
            crate::ops::binary::run::<crate::ops::binary::ops::Add>(
                Input::Tensor(dst.as_ref()),
                Input::Tensor(src.as_ref()),
                None,
                dst.as_ref(),
            )?;
        }
    }
    Ok(out)
}

/// `torch.repeat_interleave(repeats)`: index `i` repeated `repeats[i]` times.
pub fn repeat_interleave(repeats: TensorRef<'_>, output_size: Option<i64>) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(repeats.dtype())?;
    if !matches!(dtype, DType::I32 | DType::I64) {
        return Err(not_implemented("repeat_interleave_cpu", dtype));
    }
    if repeats.dim() != 1 {
        return Err(Error::runtime("repeat_interleave only accept 1D vector as repeat"));
    }
    let n = repeats.sizes()[0];
    if n == 0 {
        return new_tensor(&[0], dtype);
    }
    let r = Operand::of(&repeats)?;
    let e = dtype.size() as isize;
    let counts: Vec<i64> = (0..n as isize)
        .map(|i| {
            // SAFETY: i < n, inside `repeats`.
            let p = unsafe { r.data.offset(i * r.strides[0] as isize * e) };
            // SAFETY: as above, an element of `dtype`.
            unsafe {
                if dtype == DType::I64 {
                    p.cast::<i64>().read_unaligned()
                } else {
                    i64::from(p.cast::<i32>().read_unaligned())
                }
            }
        })
        .collect();
    let total: i64 = counts.iter().fold(0i64, |a, &c| a.wrapping_add(c));
    if output_size.is_none() && counts.iter().any(|&c| c < 0) {
        return Err(Error::runtime("repeats can not be negative"));
    }
    let len = output_size.unwrap_or(total);
    if counts.iter().any(|&c| c < 0) {
        return Err(Error::runtime("repeats can not be negative"));
    }
    if len != total {
        return Err(Error::runtime("allocated size does not match required size"));
    }
    let out = new_tensor(&[len], dtype)?;
    let data = out.as_ref().data_ptr();
    let mut at = 0usize;
    for (i, &c) in counts.iter().enumerate() {
        for _ in 0..c {
            // SAFETY: `at < len`, the total of the counts.
            unsafe {
                if dtype == DType::I64 {
                    data.cast::<i64>().add(at).write(i as i64)
                } else {
                    data.cast::<i32>().add(at).write(i as i32)
                }
            }
            at += 1;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Factories.

/// Elements in one of ATen's CPU `Vectorized<T>` for `elem`-byte elements, whose grouping the
/// factories' vector paths round by (`arange(base, step)` per vector). 256-bit vectors: PyTorch's
/// range kernels run their AVX2 build here even where it reports AVX-512 (measured: float32
/// arange rounds in groups of 8).
fn vector_lanes(elem: usize) -> usize {
    32 / elem
}

/// Writes `n` elements as ATen's `cpu_serial_kernel_vec` does for a nullary op under
/// `at::parallel_for`: chunks per thread; in each, pairs of vectors while two fit (element `j`
/// of the vector at `i` is `vector(i, j)`), then `scalar(i)` for the tail.
fn sequence<T: Copy + Send + Sync>(
    data: *mut T,
    n: usize,
    scalar: impl Fn(usize) -> T + Sync,
    vector: impl Fn(usize, usize) -> T + Sync,
) {
    let w = vector_lanes(std::mem::size_of::<T>());
    let threads = regen_runtime::host::num_threads().min(n.div_ceil(GRAIN)).max(1);
    let chunk = n.div_ceil(threads).max(1);
    let addr = data as usize;
    let fill = |begin: usize, end: usize| {
        let p = addr as *mut T;
        let mut i = begin;
        while i + 2 * w <= end {
            for v in [i, i + w] {
                for j in 0..w {
                    // SAFETY: v + j < end <= n.
                    unsafe { p.add(v + j).write(vector(v, j)) };
                }
            }
            i += 2 * w;
        }
        for k in i..end {
            // SAFETY: k < n.
            unsafe { p.add(k).write(scalar(k)) };
        }
    };
    if threads == 1 {
        return fill(0, n);
    }
    regen_runtime::host::parallel_for(threads, 1, |t0, t1| {
        for t in t0..t1 {
            fill(t * chunk, ((t + 1) * chunk).min(n));
        }
    });
}

/// Writes `value(i)` to `n` elements (threaded like ATen's `parallel_for` over a serial loop).
fn write<T: Copy + Send + Sync>(data: *mut u8, n: usize, value: impl Fn(usize) -> T + Sync) {
    let addr = data as usize;
    let fill = |begin: usize, end: usize| {
        for i in begin..end {
            // SAFETY: i < n elements of the output.
            unsafe { (addr as *mut T).add(i).write(value(i)) };
        }
    };
    if n < GRAIN || regen_runtime::host::num_threads() < 2 {
        return fill(0, n);
    }
    regen_runtime::host::parallel_for(n, GRAIN, fill);
}

/// `x.pipe(f)` is `f(x)`: keeps conversions at the end of an arithmetic chain readable.
trait Pipe: Sized {
    fn pipe<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}
impl<T> Pipe for T {}

/// Runs `fill(pointer, n)` on `out` resized to `[n]` when its element count differs (`resize_`),
/// through a contiguous temporary when `out` is not contiguous.
fn factory(out: &TensorRef<'_>, n: i64, fill: impl FnOnce(*mut u8, usize) -> Result<()>) -> Result<()> {
    let shape: Vec<i64> = if out.numel() == n { out.sizes().to_vec() } else { vec![n] };
    with_size(out, &shape, |out| {
        if regen_runtime::view::is_contiguous(out.sizes(), out.strides()) {
            return fill(out.data_ptr().cast(), n as usize);
        }
        let dtype = DType::from_scalar_type(out.dtype())?;
        let tmp = new_tensor(out.sizes(), dtype)?;
        fill(tmp.as_ref().data_ptr().cast(), n as usize)?;
        copy_(*out, tmp.as_ref())
    })
}

/// A double as ATen's `operator<<` prints it: C++'s default stream format, `%g` with 6
/// significant digits (`0.5`, `1e+10`, `3.40282e+38`, `inf`, `-nan`).
pub fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // The exponent after rounding to 6 significant digits decides between the two forms.
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s.to_string() }
    };
    if (-4..6).contains(&exp) {
        trim(&format!("{x:.*}", (5 - exp) as usize))
    } else {
        format!("{}e{}{:02}", trim(mantissa), if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// `arange_check_bounds`: the checks on the Scalars as doubles.
fn check_range(start: Scalar, end: Scalar, step: Scalar) -> Result<()> {
    let (a, b, s) = (start.to_f64(), end.to_f64(), step.to_f64());
    if s == 0.0 {
        return Err(Error::runtime("step must be nonzero"));
    }
    if !a.is_finite() || !b.is_finite() {
        return Err(Error::runtime(format!("unsupported range: {} -> {}", fmt_g(a), fmt_g(b))));
    }
    if !((s > 0.0 && b >= a) || (s < 0.0 && b <= a)) {
        return Err(Error::runtime("upper bound and lower bound inconsistent with step sign"));
    }
    Ok(())
}

/// `torch.arange(start, end, step, out=out)`: ATen's `compute_arange_size` and `arange_kernel`
/// (accumulating in double for float, float for half types, int64 for integers).
pub fn arange(start: Scalar, end: Scalar, step: Scalar, out: TensorRef<'_>) -> Result<()> {
    let dtype = DType::from_scalar_type(out.dtype())?;
    if matches!(dtype, DType::Bool | DType::C64 | DType::C128) {
        return Err(not_implemented("arange_cpu", dtype));
    }
    check_range(start, end, step)?;
    // The exact integer formula only when all three bounds are integers (torch 2.15's CPU sizes
    // `arange(0.0, -8.000001, -4.0, dtype=torch.int64)` as 3 elements, through doubles).
    let integral = [start, end, step].iter().all(|s| matches!(s, Scalar::Int(_) | Scalar::Bool(_)));
    let size_d = if dtype == DType::I64 && integral {
        let (a, b, s) =
            (Num::from_scalar(start).as_i64(), Num::from_scalar(end).as_i64(), Num::from_scalar(step).as_i64());
        let sgn = i64::from(s > 0) - i64::from(s < 0);
        (b.wrapping_sub(a).wrapping_add(s).wrapping_sub(sgn) / s) as f64
    } else {
        ((end.to_f64() - start.to_f64()) / step.to_f64()).ceil()
    };
    if !(size_d >= 0.0 && size_d <= i64::MAX as f64) {
        return Err(Error::runtime("invalid size, possible overflow?"));
    }
    let size = size_d as i64;
    factory(&out, size, |p, n| {
        macro_rules! float {
            ($t:ty, $acc:ty, $to:expr, $from:expr) => {{
                let (a, s) = (start.to_f64() as $acc, step.to_f64() as $acc);
                // ATen's compiler contracts `start + step * i` into one fused multiply-add.
                sequence::<$t>(
                    p.cast(),
                    n,
                    |i| $to(s.mul_add(i as $acc, a)),
                    |i, j| (j as $acc).mul_add(s, $from($to(s.mul_add(i as $acc, a)))).pipe($to),
                );
            }};
        }
        macro_rules! int {
            ($t:ty) => {{
                let (a, s) = (Num::from_scalar(start).as_i64(), Num::from_scalar(step).as_i64());
                sequence::<$t>(
                    p.cast(),
                    n,
                    |i| a.wrapping_add(s.wrapping_mul(i as i64)) as $t,
                    |i, j| a.wrapping_add(s.wrapping_mul((i + j) as i64)) as $t,
                );
            }};
        }
        match dtype {
            DType::F32 => float!(f32, f64, |x: f64| x as f32, f64::from),
            DType::F64 => float!(f64, f64, |x: f64| x, |x: f64| x),
            DType::F16 => float!(f16, f32, f16::from_f32, f32::from),
            DType::BF16 => float!(bf16, f32, bf16::from_f32, f32::from),
            DType::U8 => int!(u8),
            DType::I8 => int!(i8),
            DType::I16 => int!(i16),
            DType::I32 => int!(i32),
            DType::I64 => int!(i64),
            _ => unreachable!(),
        }
        Ok(())
    })
}

/// `torch.range(start, end, step, out=out)` (deprecated, inclusive): `start + i * step` in the
/// accumulation type.
pub fn range(start: Scalar, end: Scalar, step: Scalar, out: TensorRef<'_>) -> Result<()> {
    let dtype = DType::from_scalar_type(out.dtype())?;
    if matches!(dtype, DType::Bool | DType::C64 | DType::C128) {
        return Err(not_implemented("range_cpu", dtype));
    }
    check_range(start, end, step)?;
    macro_rules! float {
        ($t:ty, $acc:ty, $to:expr) => {{
            let (a, b, s) = (start.to_f64() as $acc, end.to_f64() as $acc, step.to_f64() as $acc);
            let size = ((b - a) / s + 1.0) as i64;
            factory(&out, size, |p, n| {
                let p = p.cast::<$t>();
                for i in 0..n {
                    // SAFETY: i < n elements of the output.
                    unsafe { p.add(i).write($to(a + i as $acc * s)) };
                }
                Ok(())
            })
        }};
    }
    macro_rules! int {
        ($t:ty) => {{
            let (a, b, s) =
                (Num::from_scalar(start).as_i64(), Num::from_scalar(end).as_i64(), Num::from_scalar(step).as_i64());
            if s == 0 {
                // ATen divides by zero here (a float step that truncates to 0).
                return Err(Error::runtime("step must be nonzero"));
            }
            let size = b.wrapping_sub(a) / s + 1;
            factory(&out, size, |p, n| {
                let p = p.cast::<$t>();
                for i in 0..n {
                    // SAFETY: i < n elements of the output.
                    unsafe { p.add(i).write(a.wrapping_add((i as i64).wrapping_mul(s)) as $t) };
                }
                Ok(())
            })
        }};
    }
    match dtype {
        DType::F32 => float!(f32, f64, |x: f64| x as f32),
        DType::F64 => float!(f64, f64, |x: f64| x),
        DType::F16 => float!(f16, f32, f16::from_f32),
        DType::BF16 => float!(bf16, f32, bf16::from_f32),
        DType::U8 => int!(u8),
        DType::I8 => int!(i8),
        DType::I16 => int!(i16),
        DType::I32 => int!(i32),
        DType::I64 => int!(i64),
        _ => unreachable!(),
    }
}

/// `torch.linspace(start, end, steps, out=out)`: ATen's `linspace_kernel` — the first half from
/// `start`, the second from `end`, in the element type (integers through a double step), with
/// its vector path's rounding.
pub fn linspace(start: Scalar, end: Scalar, steps: i64, out: TensorRef<'_>) -> Result<()> {
    if steps < 0 {
        return Err(Error::runtime("number of steps must be non-negative"));
    }
    let dtype = DType::from_scalar_type(out.dtype())?;
    if dtype == DType::Bool {
        return Err(not_implemented("linspace_cpu", dtype));
    }
    factory(&out, steps, |p, n| {
        if n == 0 {
            return Ok(());
        }
        let half = steps / 2;
        let last = steps - 1;
        if n == 1 {
            // SAFETY: factory hands a contiguous buffer of n = 1 element of out's dtype, which
            // dispatch_all! maps to T.
            crate::dispatch_all!(dtype, |T| unsafe { p.cast::<T>().write(T::from_num(Num::from_scalar(start))) });
            return Ok(());
        }
        let first = |i: usize| (i as i64) < half;
        // ATen's serial loop: the first half from `start`, the second from `end`, `start + step *
        // i` contracted into one fused multiply-add by its compiler.
        macro_rules! native {
            ($t:ty, $r:ty) => {{
                let (a, b) =
                    (<$t>::from_num(Num::from_scalar(start)).to_num(), <$t>::from_num(Num::from_scalar(end)).to_num());
                let (a, b) = (a.as_complex(), b.as_complex());
                let (a, b) = ((a.0 as $r, a.1 as $r), (b.0 as $r, b.1 as $r));
                let s = ((b.0 - a.0) / last as $r, (b.1 - a.1) / last as $r);
                write::<$t>(p, n, |i| {
                    let (re, im) = if first(i) {
                        (s.0.mul_add(i as $r, a.0), s.1.mul_add(i as $r, a.1))
                    } else {
                        let k = (last - i as i64) as $r;
                        ((-s.0).mul_add(k, b.0), (-s.1).mul_add(k, b.1))
                    };
                    <$t>::from_num(Num::Complex(f64::from(re), f64::from(im)))
                });
            }};
        }
        // Half types compute in float and round once.
        macro_rules! half {
            ($t:ty) => {{
                let (a, b) =
                    (<$t>::from_num(Num::from_scalar(start)).to_f32(), <$t>::from_num(Num::from_scalar(end)).to_f32());
                let s = (b - a) / last as f32;
                write::<$t>(p, n, |i| {
                    <$t>::from_f32(if first(i) {
                        s.mul_add(i as f32, a)
                    } else {
                        (-s).mul_add((last - i as i64) as f32, b)
                    })
                });
            }};
        }
        // Integers: a double step, each value truncated.
        macro_rules! int {
            ($t:ty) => {{
                let (a, b) =
                    (<$t>::from_num(Num::from_scalar(start)) as f64, <$t>::from_num(Num::from_scalar(end)) as f64);
                let s = (b - a) / last as f64;
                write::<$t>(p, n, |i| {
                    cpp_int::<$t>(if first(i) {
                        s.mul_add(i as f64, a)
                    } else {
                        (-s).mul_add((last - i as i64) as f64, b)
                    })
                });
            }};
        }
        match dtype {
            DType::F32 => native!(f32, f32),
            DType::F64 => native!(f64, f64),
            DType::C64 => native!(Complex32, f32),
            DType::C128 => native!(Complex64, f64),
            DType::F16 => half!(f16),
            DType::BF16 => half!(bf16),
            DType::U8 => int!(u8),
            DType::I8 => int!(i8),
            DType::I16 => int!(i16),
            DType::I32 => int!(i32),
            DType::I64 => int!(i64),
            DType::Bool => unreachable!(),
        }
        Ok(())
    })
}

/// `torch.logspace(start, end, steps, base, out=out)`: `base ** linspace`, with ATen's double
/// step for real types and complex arithmetic for complex ones.
pub fn logspace(start: Scalar, end: Scalar, steps: i64, base: f64, out: TensorRef<'_>) -> Result<()> {
    if steps < 0 {
        return Err(Error::runtime("number of steps must be non-negative"));
    }
    let dtype = DType::from_scalar_type(out.dtype())?;
    if dtype == DType::Bool {
        return Err(not_implemented("logspace_cpu", dtype));
    }
    factory(&out, steps, |p, n| {
        if n == 0 {
            return Ok(());
        }
        let half = steps / 2;
        let last = steps - 1;
        if n == 1 {
            let v = if dtype.is_complex() {
                let (re, im) = Num::from_scalar(start).as_complex();
                let z = Complex64::new(base, 0.0).powc(Complex64::new(re, im));
                Num::Complex(z.re, z.im)
            } else {
                Num::Float(base.powf(start.to_f64()))
            };
            // SAFETY: factory hands a contiguous buffer of n = 1 element of out's dtype, which
            // dispatch_all! maps to T.
            crate::dispatch_all!(dtype, |T| unsafe { p.cast::<T>().write(T::from_num(v)) });
            return Ok(());
        }
        macro_rules! complex {
            ($t:ty, $r:ty) => {{
                let (a, b) = (<$t>::from_num(Num::from_scalar(start)), <$t>::from_num(Num::from_scalar(end)));
                let bs = <$t>::new(base as $r, 0.0);
                let s = (b - a) / <$t>::new(last as $r, 0.0);
                let p = p.cast::<$t>();
                for i in 0..n {
                    let x = if (i as i64) < half {
                        a + s * <$t>::new(i as $r, 0.0)
                    } else {
                        b - s * <$t>::new((last - i as i64) as $r, 0.0)
                    };
                    // SAFETY: i < n.
                    unsafe { p.add(i).write(bs.powc(x)) };
                }
            }};
        }
        macro_rules! real {
            ($t:ty) => {{
                let (a, b) = (<$t>::from_num(Num::from_scalar(start)), <$t>::from_num(Num::from_scalar(end)));
                let (af, bf) = (a.to_num().as_f64(), b.to_num().as_f64());
                // `static_cast<double>(end - start)`, the difference in the element type.
                let diff = <$t>::from_num(Num::Float(bf - af)).to_num().as_f64();
                let diff = if <$t as Element>::DTYPE.is_floating() { diff } else { int_diff::<$t>(a, b) };
                let s = diff / last as f64;
                let p = p.cast::<$t>();
                for i in 0..n {
                    let x = if (i as i64) < half { af + s * i as f64 } else { bf - s * (last - i as i64) as f64 };
                    // SAFETY: i < n.
                    unsafe { p.add(i).write(real_as::<$t>(base.powf(x))) };
                }
            }};
        }
        match dtype {
            DType::C64 => complex!(Complex32, f32),
            DType::C128 => complex!(Complex64, f64),
            DType::F32 => real!(f32),
            DType::F64 => real!(f64),
            DType::F16 => real!(f16),
            DType::BF16 => real!(bf16),
            DType::U8 => real!(u8),
            DType::I8 => real!(i8),
            DType::I16 => real!(i16),
            DType::I32 => real!(i32),
            DType::I64 => real!(i64),
            DType::Bool => unreachable!(),
        }
        Ok(())
    })
}

/// A double as C++ converts it on x86: floating types round, integers truncate, and a value out
/// of range (or NaN) becomes the "integer indefinite" of a 32- or 64-bit conversion, narrowed.
fn real_as<T: Element>(x: f64) -> T {
    if T::DTYPE.is_floating() { T::from_num(Num::Float(x)) } else { cpp_int::<T>(x) }
}

fn cpp_int<T: Element>(x: f64) -> T {
    let i = if T::DTYPE == DType::I64 {
        if x.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) {
            i64::MIN
        } else {
            x as i64
        }
    } else if x.is_nan() || x <= -2_147_483_649.0 || x >= 2_147_483_648.0 {
        i64::from(i32::MIN)
    } else {
        i64::from(x as i32)
    };
    T::from_num(Num::Int(i))
}

/// `end - start` of an integer type as C++ computes it (promoted to int, wrapped for int64).
fn int_diff<T: Element>(a: T, b: T) -> f64 {
    let (a, b) = (a.to_num().as_i64(), b.to_num().as_i64());
    match T::DTYPE {
        DType::I64 => b.wrapping_sub(a) as f64,
        _ => (b - a) as f64,
    }
}

/// `torch.eye(n, m, out=out)`: zeros, then ones on the diagonal, through `out`'s strides.
pub fn eye(n: i64, m: i64, out: TensorRef<'_>) -> Result<()> {
    if n < 0 {
        return Err(Error::runtime(format!("n must be greater or equal to 0, got {n}")));
    }
    if m < 0 {
        return Err(Error::runtime(format!("m must be greater or equal to 0, got {m}")));
    }
    with_size(&out, &[n, m], |out| {
        regen_runtime::bootstrap::fill_(*out, Scalar::Int(0))?;
        let dtype = DType::from_scalar_type(out.dtype())?;
        let o = Operand::of(out)?;
        let step = (o.strides[0] + o.strides[1]) as isize;
        crate::dispatch_all!(dtype, |T| {
            for i in 0..n.min(m) as isize {
                // SAFETY: (i, i) is inside the n x m output.
                unsafe { o.data.cast::<T>().offset(i * step).write(T::one()) };
            }
        });
        Ok(())
    })
}

/// `torch.tril_indices` / `torch.triu_indices`: the coordinates of the triangle in row-major
/// order, as a `[2, count]` tensor.
pub fn triangle_indices(row: i64, col: i64, offset: i64, dtype: Option<ScalarType>, lower: bool) -> Result<Tensor> {
    let name = if lower { "tril_indices" } else { "triu_indices" };
    let dtype = dtype.map_or(Ok(DType::I64), DType::from_scalar_type)?;
    if !matches!(dtype, DType::I32 | DType::I64) {
        return Err(not_implemented(name, dtype));
    }
    if row < 0 {
        return Err(Error::runtime(format!("row must be non-negative, got{row}")));
    }
    if col < 0 {
        return Err(Error::runtime(format!("col must be non-negative, got{col}")));
    }
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for r in 0..row {
        let (c0, c1) = if lower { (0, (r + offset + 1).clamp(0, col)) } else { ((r + offset).clamp(0, col), col) };
        for c in c0..c1 {
            rows.push(r);
            cols.push(c);
        }
    }
    let count = rows.len();
    let out = new_tensor(&[2, count as i64], dtype)?;
    let p = out.as_ref().data_ptr();
    crate::dispatch_all!(dtype, |T| {
        let p = p.cast::<T>();
        for (k, (&r, &c)) in rows.iter().zip(&cols).enumerate() {
            // SAFETY: k < count; the output holds 2 x count elements.
            unsafe {
                p.add(k).write(T::from_num(Num::Int(r)));
                p.add(count + k).write(T::from_num(Num::Int(c)));
            }
        }
    });
    Ok(out)
}

/// This family's kernels: group `shape` of regen.toml's `[implement]`.
impl crate::ShapeKernels for crate::Reference {
    fn cat_out(&self, tensors: regen_runtime::TensorList<'_>, dim: i64, out: TensorRef<'_>) -> Result<()> {
        cat(tensors, dim, out)
    }
    fn flip(&self, self_: TensorRef<'_>, dims: &[i64]) -> Result<Tensor> {
        flip(self_, dims)
    }
    fn roll(&self, self_: TensorRef<'_>, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        roll(self_, shifts, dims)
    }
    fn tril_out(&self, self_: TensorRef<'_>, diagonal: i64, out: TensorRef<'_>) -> Result<()> {
        triangle(self_, diagonal, out, true)
    }
    fn triu_out(&self, self_: TensorRef<'_>, diagonal: i64, out: TensorRef<'_>) -> Result<()> {
        triangle(self_, diagonal, out, false)
    }
    fn tril_indices(
        &self,
        row: i64,
        col: i64,
        offset: i64,
        dtype: Option<ScalarType>,
        _layout: Option<regen_runtime::Layout>,
        device: Option<regen_runtime::Device>,
        _pin_memory: Option<bool>,
    ) -> Result<Tensor> {
        regen_runtime::bootstrap::check_device(device)?;
        triangle_indices(row, col, offset, dtype, true)
    }
    fn triu_indices(
        &self,
        row: i64,
        col: i64,
        offset: i64,
        dtype: Option<ScalarType>,
        _layout: Option<regen_runtime::Layout>,
        device: Option<regen_runtime::Device>,
        _pin_memory: Option<bool>,
    ) -> Result<Tensor> {
        regen_runtime::bootstrap::check_device(device)?;
        triangle_indices(row, col, offset, dtype, false)
    }
    fn repeat_interleave_tensor(&self, repeats: TensorRef<'_>, output_size: Option<i64>) -> Result<Tensor> {
        repeat_interleave(repeats, output_size)
    }
    fn unfold(&self, self_: TensorRef<'_>, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
        unfold(self_, dimension, size, step)
    }
    fn unfold_backward(
        &self,
        grad_in: TensorRef<'_>,
        input_sizes: &[i64],
        dim: i64,
        size: i64,
        step: i64,
    ) -> Result<Tensor> {
        unfold_backward(grad_in, input_sizes, dim, size, step)
    }
    fn narrow_copy_out(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        start: i64,
        length: i64,
        out: TensorRef<'_>,
    ) -> Result<()> {
        narrow_copy(self_, dim, start, length, out)
    }
    fn arange_start_out(&self, start: Scalar, end: Scalar, step: Scalar, out: TensorRef<'_>) -> Result<()> {
        arange(start, end, step, out)
    }
    fn range_out(&self, start: Scalar, end: Scalar, step: Scalar, out: TensorRef<'_>) -> Result<()> {
        range(start, end, step, out)
    }
    fn linspace_out(&self, start: Scalar, end: Scalar, steps: i64, out: TensorRef<'_>) -> Result<()> {
        linspace(start, end, steps, out)
    }
    fn logspace_out(&self, start: Scalar, end: Scalar, steps: i64, base: f64, out: TensorRef<'_>) -> Result<()> {
        logspace(start, end, steps, base, out)
    }
    fn eye_out(&self, n: i64, out: TensorRef<'_>) -> Result<()> {
        eye(n, n, out)
    }
    fn eye_m_out(&self, n: i64, m: i64, out: TensorRef<'_>) -> Result<()> {
        eye(n, m, out)
    }
}
