//! The inner loops every elementwise kernel runs (ATen's `cpu_kernel` / `cpu_kernel_vec`): a
//! scalar function, and optionally a vector function over contiguous runs, applied over the runs
//! an [`Iter`] produces. Contiguous runs and runs where one input is a broadcast scalar get loops
//! the compiler vectorises; anything else is a strided loop. Operand 0 is the output.

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
pub fn unary<A: Copy + Send + Sync, O: Copy + Send + Sync>(it: &Iter, f: impl Fn(A) -> O + Sync) {
    unary_vec(it, f, None);
}

/// `out = f(a)`, with `vector(a, out, n)` for contiguous runs (it may be called with `a == out`).
pub fn unary_vec<A: Copy + Send + Sync, O: Copy + Send + Sync>(
    it: &Iter,
    f: impl Fn(A) -> O + Sync,
    vector: Option<unsafe fn(*const A, *mut O, usize)>,
) {
    it.for_each(|p, s, n| {
        let (o, a) = (p[0].cast::<O>(), p[1].cast::<A>().cast_const());
        // SAFETY: the iterator hands out runs of `n` elements inside both operands; writes go to
        // the output only, element k after reading element k (so in-place is fine).
        unsafe {
            if dense::<O>(s[0]) && dense::<A>(s[1]) {
                if let Some(v) = vector {
                    return v(a, o, n);
                }
                for k in 0..n {
                    o.add(k).write(f(a.add(k).read()));
                }
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
    f: impl Fn(A, B) -> O + Sync,
) {
    it.for_each(|p, s, n| {
        let (o, a, b) = (p[0].cast::<O>(), p[1].cast::<A>().cast_const(), p[2].cast::<B>().cast_const());
        // SAFETY: as in `unary_vec`.
        unsafe {
            if dense::<O>(s[0]) && dense::<A>(s[1]) && dense::<B>(s[2]) {
                for k in 0..n {
                    o.add(k).write(f(a.add(k).read(), b.add(k).read()));
                }
            } else if dense::<O>(s[0]) && dense::<A>(s[1]) && s[2] == 0 {
                let y = b.read_unaligned();
                for k in 0..n {
                    o.add(k).write(f(a.add(k).read(), y));
                }
            } else if dense::<O>(s[0]) && s[1] == 0 && dense::<B>(s[2]) {
                let x = a.read_unaligned();
                for k in 0..n {
                    o.add(k).write(f(x, b.add(k).read()));
                }
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
    f: impl Fn(A, B, C) -> O + Sync,
) {
    it.for_each(|p, s, n| {
        let (o, a, b, c) = (p[0], p[1].cast_const(), p[2].cast_const(), p[3].cast_const());
        // SAFETY: as in `unary_vec`.
        unsafe {
            if dense::<O>(s[0]) && dense::<A>(s[1]) && dense::<B>(s[2]) && dense::<C>(s[3]) {
                let (o, a, b, c) = (o.cast::<O>(), a.cast::<A>(), b.cast::<B>(), c.cast::<C>());
                for k in 0..n {
                    o.add(k).write(f(a.add(k).read(), b.add(k).read(), c.add(k).read()));
                }
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
pub fn nary<T: Copy + Send + Sync, O: Copy + Send + Sync, const N: usize>(it: &Iter, f: impl Fn([T; N]) -> O + Sync) {
    it.for_each(|p, s, n| {
        let o = p[0].cast::<O>();
        let ins: [*const T; N] = std::array::from_fn(|k| p[k + 1].cast::<T>().cast_const());
        // SAFETY: as in `unary_vec`.
        unsafe {
            if dense::<O>(s[0]) && (1..=N).all(|k| dense::<T>(s[k])) {
                for k in 0..n {
                    o.add(k).write(f(ins.map(|a| a.add(k).read())));
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
