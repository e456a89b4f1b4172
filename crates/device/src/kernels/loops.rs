//! The inner loops every elementwise kernel runs (ATen's `cpu_kernel` / `cpu_kernel_vec`): a
//! scalar function, and optionally a vector function over contiguous runs, applied over the runs
//! an [`Iter`] produces. Contiguous runs and runs where one input is a broadcast scalar get loops
//! the compiler vectorises; anything else is a strided loop. Operand 0 is the output.

use super::iter::Iter;

/// Whether a run of operand `k` is contiguous for elements of `T`.
#[inline(always)]
fn dense<T>(stride: isize) -> bool {
    stride == std::mem::size_of::<T>() as isize
}

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
/// ops of [`super::pointwise`]).
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
