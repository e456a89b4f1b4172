//! The inner loops every elementwise kernel runs (ATen's `cpu_kernel` / `cpu_kernel_vec`): a
//! scalar function, and optionally a vector function over contiguous runs, applied over the runs
//! an [`Iter`] produces. Contiguous runs and runs where an input is a broadcast scalar get loops
//! the compiler vectorises, compiled for each vector tier (`tiered`) and chunked through a
//! stack buffer when the output is an input (in place); anything else is a strided loop. Operand
//! 0 is the output.

use std::mem::MaybeUninit;

use crate::dispatch_all;
use crate::engine::dtype::cast;
use crate::engine::iter::{Iter, Operand};

/// Whether a run of operand `k` is contiguous for elements of `T`.
#[inline(always)]
fn dense<T>(stride: isize) -> bool {
    stride == std::mem::size_of::<T>() as isize
}

/// A vectorised function over `n` contiguous elements (`x` may equal `out`).
pub type Vector<T> = unsafe fn(*const T, *mut T, usize);

/// `out = f(a)` over every element.
pub fn unary<A: Copy + Send + Sync, O: Copy + Send + Sync>(it: &Iter, f: impl Fn(A) -> O + Sync + Copy) {
    unary_vec(it, f, None);
}

/// `out = f(a)`, with `vector(a, out, n)` for contiguous runs (it may be called with `a == out`).
pub fn unary_vec<A: Copy + Send + Sync, O: Copy + Send + Sync>(
    it: &Iter,
    f: impl Fn(A) -> O + Sync + Copy,
    vector: Option<unsafe fn(*const A, *mut O, usize)>,
) {
    it.for_each(move |p, s, n| {
        let (o, a) = (p[0].cast::<O>(), p[1].cast::<A>().cast_const());
        // SAFETY: the iterator hands out runs of `n` elements inside both operands; writes go to
        // the output only, element k after reading element k (so in-place is fine).
        unsafe {
            if dense::<O>(s[0]) && dense::<A>(s[1]) {
                if let Some(v) = vector {
                    return v(a, o, n);
                }
                tiered(Dense {
                    out: o,
                    n,
                    inputs: [a.cast::<u8>()],
                    sizes: [size_of::<A>()],
                    f: move |k| f(a.add(k).read()),
                });
            } else {
                let (so, sa) = (s[0], s[1]);
                let (o, a) = (o.cast::<u8>(), a.cast::<u8>());
                for k in 0..n as isize {
                    o.offset(k * so).cast::<O>().write_unaligned(f(a.offset(k * sa).cast::<A>().read_unaligned()));
                }
            }
        }
    });
}

/// `out = f(a, b)` over every element.
pub fn binary<A: Copy + Send + Sync, B: Copy + Send + Sync, O: Copy + Send + Sync>(
    it: &Iter,
    f: impl Fn(A, B) -> O + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let (o, a, b) = (p[0].cast::<O>(), p[1].cast::<A>().cast_const(), p[2].cast::<B>().cast_const());
        let inputs = [a.cast::<u8>(), b.cast::<u8>()];
        // SAFETY: as in `unary_vec`.
        unsafe {
            if dense::<O>(s[0]) && dense::<A>(s[1]) && dense::<B>(s[2]) {
                let sizes = [size_of::<A>(), size_of::<B>()];
                tiered(Dense { out: o, n, inputs, sizes, f: move |k| f(a.add(k).read(), b.add(k).read()) });
            } else if dense::<O>(s[0]) && dense::<A>(s[1]) && s[2] == 0 {
                let y = b.read_unaligned();
                let sizes = [size_of::<A>(), 0];
                tiered(Dense { out: o, n, inputs, sizes, f: move |k| f(a.add(k).read(), y) });
            } else if dense::<O>(s[0]) && s[1] == 0 && dense::<B>(s[2]) {
                let x = a.read_unaligned();
                let sizes = [0, size_of::<B>()];
                tiered(Dense { out: o, n, inputs, sizes, f: move |k| f(x, b.add(k).read()) });
            } else {
                let (o, a, b) = (o.cast::<u8>(), a.cast::<u8>(), b.cast::<u8>());
                for k in 0..n as isize {
                    let x = a.offset(k * s[1]).cast::<A>().read_unaligned();
                    let y = b.offset(k * s[2]).cast::<B>().read_unaligned();
                    o.offset(k * s[0]).cast::<O>().write_unaligned(f(x, y));
                }
            }
        }
    });
}

/// `out = f(a, b, c)` over every element.
pub fn ternary<A: Copy + Send + Sync, B: Copy + Send + Sync, C: Copy + Send + Sync, O: Copy + Send + Sync>(
    it: &Iter,
    f: impl Fn(A, B, C) -> O + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let (o, a, b, c) = (p[0], p[1].cast_const(), p[2].cast_const(), p[3].cast_const());
        // SAFETY: as in `unary_vec`.
        unsafe {
            if dense::<O>(s[0]) && dense::<A>(s[1]) && dense::<B>(s[2]) && dense::<C>(s[3]) {
                let (o, a, b, c) = (o.cast::<O>(), a.cast::<A>(), b.cast::<B>(), c.cast::<C>());
                let inputs = [a.cast::<u8>(), b.cast::<u8>(), c.cast::<u8>()];
                let sizes = [size_of::<A>(), size_of::<B>(), size_of::<C>()];
                tiered(Dense {
                    out: o,
                    n,
                    inputs,
                    sizes,
                    f: move |k| f(a.add(k).read(), b.add(k).read(), c.add(k).read()),
                });
            } else {
                for k in 0..n as isize {
                    let x = a.offset(k * s[1]).cast::<A>().read_unaligned();
                    let y = b.offset(k * s[2]).cast::<B>().read_unaligned();
                    let z = c.offset(k * s[3]).cast::<C>().read_unaligned();
                    o.offset(k * s[0]).cast::<O>().write_unaligned(f(x, y, z));
                }
            }
        }
    });
}

/// `out = f([a, b, ...])` over every element, for `N` inputs of one dtype (the parameterised
/// ops of [`crate::ops::pointwise`]).
pub fn nary<T: Copy + Send + Sync, O: Copy + Send + Sync, const N: usize>(
    it: &Iter,
    f: impl Fn([T; N]) -> O + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let o = p[0].cast::<O>();
        let ins: [*const T; N] = std::array::from_fn(|k| p[k + 1].cast::<T>().cast_const());
        // SAFETY: as in `unary_vec`.
        unsafe {
            if dense::<O>(s[0]) && (1..=N).all(|k| dense::<T>(s[k])) {
                let inputs = ins.map(|a| a.cast::<u8>());
                tiered(Dense {
                    out: o,
                    n,
                    inputs,
                    sizes: [size_of::<T>(); N],
                    f: move |k| f(ins.map(|a| a.add(k).read())),
                });
            } else if dense::<O>(s[0]) && (1..=N).all(|k| dense::<T>(s[k]) || s[k] == 0) {
                // Contiguous but for broadcast scalars (clamp's bounds, lerp's weight): each of
                // those is read from a run of its copies, so every input is contiguous in the loop.
                let copies: [[T; BROADCAST]; N] = std::array::from_fn(|j| [ins[j].read_unaligned(); BROADCAST]);
                let mut i = 0;
                while i < n {
                    let m = (n - i).min(BROADCAST);
                    let at: [*const T; N] =
                        std::array::from_fn(|j| if s[j + 1] == 0 { copies[j].as_ptr() } else { ins[j].add(i) });
                    let inputs = at.map(|a| a.cast::<u8>());
                    let sizes = std::array::from_fn(|j| if s[j + 1] == 0 { 0 } else { size_of::<T>() });
                    tiered(Dense { out: o.add(i), n: m, inputs, sizes, f: move |k| f(at.map(|a| a.add(k).read())) });
                    i += m;
                }
            } else {
                let o = o.cast::<u8>();
                for k in 0..n as isize {
                    let x: [T; N] =
                        std::array::from_fn(|j| ins[j].cast::<u8>().offset(k * s[j + 1]).cast::<T>().read_unaligned());
                    o.offset(k * s[0]).cast::<O>().write_unaligned(f(x));
                }
            }
        }
    });
}

/// A contiguous run: `out[k] = f(k)` for `k < n`, where `f` reads element `k` of `inputs`
/// (`sizes` bytes each; 0 for a broadcast scalar read once).
struct Dense<O, F, const N: usize> {
    out: *mut O,
    n: usize,
    inputs: [*const u8; N],
    sizes: [usize; N],
    f: F,
}

/// Elements per run of a broadcast scalar's copies in [`nary`] (at most 4 KiB of complex doubles).
const BROADCAST: usize = 256;

/// Elements per chunk of an in-place run (a stack buffer of at most 64 complex doubles: 1 KiB).
const CHUNK: usize = 64;

impl<O: Copy, F: Fn(usize) -> O, const N: usize> Dense<O, F, N> {
    /// Writes every element. When the output overlaps an input (an in-place op), each chunk is
    /// computed into a stack buffer, then copied out: the compiler cannot vectorise a loop whose
    /// stores may alias its loads, and element k is still read before it is written.
    ///
    /// # Safety
    /// `out` holds `n` writable elements; `f(k)` reads only inside the inputs' runs.
    #[inline(always)]
    unsafe fn run(self) {
        let Dense { out, n, inputs, sizes, f } = self;
        let bytes = n * size_of::<O>();
        let (lo, hi) = (out as usize, out as usize + bytes);
        let overlaps = (0..N).any(|j| {
            let start = inputs[j] as usize;
            start < hi && lo < start + (n * sizes[j]).max(1)
        });
        if !overlaps {
            // SAFETY: per the contract; no input overlaps the output, so it is a unique borrow.
            fill(unsafe { std::slice::from_raw_parts_mut(out.cast::<MaybeUninit<O>>(), n) }, 0, &f);
            return;
        }
        let mut buf = [const { MaybeUninit::<O>::uninit() }; CHUNK];
        let mut i = 0;
        while i < n {
            let m = (n - i).min(CHUNK);
            fill(&mut buf[..m], i, &f);
            // SAFETY: the first `m` slots were written; the output holds them at `i`.
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().cast::<O>(), out.add(i), m) };
            i += m;
        }
    }
}

/// `out[k] = f(first + k)`. A `&mut` slice, so the compiler knows the stores alias none of the
/// loads `f` makes and vectorises without a runtime overlap check (which it gave up on for some
/// rows).
#[inline(always)]
fn fill<O, F: Fn(usize) -> O>(out: &mut [MaybeUninit<O>], first: usize, f: &F) {
    for (k, slot) in out.iter_mut().enumerate() {
        slot.write(f(first + k));
    }
}

/// Runs a contiguous loop compiled for the vector tier in force (AVX-512, AVX2+FMA, or baseline
/// x86-64: [`crate::engine::capability`]), so every table row is vectorised by the compiler,
/// not only those with a hand-written vector function, and rounding (`floor`, `round`) is one
/// instruction instead of a libm call. The tiers compute the same values: Rust never
/// reassociates or contracts float arithmetic, so only the number of lanes changes.
///
/// # Safety
/// As [`Dense::run`].
#[inline(always)]
unsafe fn tiered<O: Copy, F: Fn(usize) -> O, const N: usize>(dense: Dense<O, F, N>) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx,avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")]
        unsafe fn avx512<O: Copy, F: Fn(usize) -> O, const N: usize>(dense: Dense<O, F, N>) {
            // SAFETY: forwarded contract.
            unsafe { dense.run() }
        }
        #[target_feature(enable = "avx,avx2,fma")]
        unsafe fn avx2<O: Copy, F: Fn(usize) -> O, const N: usize>(dense: Dense<O, F, N>) {
            // SAFETY: forwarded contract.
            unsafe { dense.run() }
        }
        if crate::engine::has_avx512() {
            // SAFETY: the features were detected; forwarded contract.
            return unsafe { avx512(dense) };
        }
        if crate::engine::has_avx2() {
            // SAFETY: as above.
            return unsafe { avx2(dense) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { dense.run() }
}

/// Copies `src` (any strides, broadcast to `dst`'s shape) into `dst`, converting the dtype.
///
/// # Safety
/// Both operands describe live memory; `dst` is writable and does not partially overlap `src`.
pub unsafe fn copy_cast(src: &Operand, dst: &Operand) {
    let it = Iter::new(std::slice::from_ref(dst), std::slice::from_ref(src), &dst.sizes);
    dispatch_all!(src.dtype, |S| dispatch_all!(dst.dtype, |D| unary::<S, D>(&it, cast::<S, D>)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dtype::DType;
    use crate::engine::iter::{GRAIN, broadcast_shapes};

    #[test]
    fn runs_cover_every_element_once_in_parallel_too() {
        let n = 3 * GRAIN + 17;
        let mut src: Vec<i64> = (0..n as i64).collect();
        let mut dst = vec![0i64; n];
        // One contiguous run longer than three grains: split across threads.
        let s = [n as i64];
        let it = Iter::new(
            &[Operand::over(&mut dst, &s, &[1], DType::I64)],
            &[Operand::over(&mut src, &s, &[1], DType::I64)],
            &s,
        );
        unary::<i64, i64>(&it, |x| x * 2);
        assert!(dst.iter().enumerate().all(|(k, &v)| v == 2 * k as i64));
        // A non-coalescible strided shape: every other column of a [7, 10] matrix.
        let mut m: Vec<f32> = (0..70).map(|x| x as f32).collect();
        let mut out = vec![0f32; 35];
        let it = Iter::new(
            &[Operand::over(&mut out, &[7, 5], &[5, 1], DType::F32)],
            &[Operand::over(&mut m, &[7, 5], &[10, 2], DType::F32)],
            &[7, 5],
        );
        unary::<f32, f32>(&it, |x| x + 0.5);
        for r in 0..7 {
            for c in 0..5 {
                assert_eq!(out[r * 5 + c], (r * 10 + c * 2) as f32 + 0.5);
            }
        }
    }

    #[test]
    fn in_place_runs_and_broadcast_scalars_give_the_plain_loops_values() {
        // Longer than a chunk and a broadcast run, not a multiple of either.
        let n = 3 * BROADCAST + 5;
        let s = [n as i64];
        let values: Vec<f32> = (0..n).map(|k| (k as f32 - 400.0) * 0.37).chain([f32::NAN]).skip(1).collect();
        let relu = |x: f32| if x.is_nan() || x > 0.0 { x } else { 0.0 };
        // In place (output == input): the chunked path.
        let mut data = values.clone();
        let ptr = data.as_mut_ptr();
        let it = Iter::new(
            &[Operand { data: ptr.cast(), ..Operand::over(&mut data, &s, &[1], DType::F32) }],
            &[Operand { data: ptr.cast(), ..Operand::over(&mut [0f32; 0], &s, &[1], DType::F32) }],
            &s,
        );
        unary::<f32, f32>(&it, relu);
        let expected: Vec<f32> = values.iter().map(|&x| relu(x)).collect();
        assert!(data.iter().zip(&expected).all(|(a, b)| a.to_bits() == b.to_bits()));
        // Out of place, rounding (one instruction in the vector tiers, libm's in the scalar one).
        let mut src = values.clone();
        let mut out = vec![0f32; n];
        let it = Iter::new(
            &[Operand::over(&mut out, &s, &[1], DType::F32)],
            &[Operand::over(&mut src, &s, &[1], DType::F32)],
            &s,
        );
        unary::<f32, f32>(&it, |x| x.round_ties_even());
        assert!(out.iter().zip(&values).all(|(a, b)| a.to_bits() == b.round_ties_even().to_bits()));
        // clamp(x, lo, hi) with both bounds broadcast scalars (stride 0), in place.
        let (mut lo, mut hi) = ([-1.5f32], [2.25f32]);
        let mut data = values.clone();
        let ptr = data.as_mut_ptr();
        let it = Iter::new(
            &[Operand { data: ptr.cast(), ..Operand::over(&mut data, &s, &[1], DType::F32) }],
            &[
                Operand { data: ptr.cast(), ..Operand::over(&mut [0f32; 0], &s, &[1], DType::F32) },
                Operand::over(&mut lo, &s, &[0], DType::F32),
                Operand::over(&mut hi, &s, &[0], DType::F32),
            ],
            &s,
        );
        // max then min, not clamp: the NaN at the end gives the lower bound both ways.
        #[allow(clippy::manual_clamp)]
        let bound = |[x, lo, hi]: [f32; 3]| x.max(lo).min(hi);
        nary::<f32, f32, 3>(&it, bound);
        assert!(data.iter().zip(&values).all(|(a, &b)| *a == bound([b, -1.5, 2.25])));
    }

    #[test]
    fn copy_cast_converts_and_broadcasts() {
        let mut src = vec![1.5f32, -2.5, 3.0];
        let mut dst = vec![0i32; 6];
        // SAFETY: both live for the call.
        unsafe {
            copy_cast(
                &Operand::over(&mut src, &[3], &[1], DType::F32),
                &Operand::over(&mut dst, &[2, 3], &[3, 1], DType::I32),
            )
        };
        assert_eq!(dst, [1, -2, 3, 1, -2, 3]);
        assert!(broadcast_shapes(&[&[2, 1, 4], &[3, 1]]).unwrap() == [2, 3, 4]);
        assert!(broadcast_shapes(&[&[2], &[3]]).is_err());
    }
}
