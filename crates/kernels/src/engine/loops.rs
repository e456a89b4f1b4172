//! The inner loops every elementwise kernel runs (ATen's `cpu_kernel` / `cpu_kernel_vec`): a
//! scalar function, and optionally a vector function (kernels/math/vmath.rs), applied over the
//! runs an [`Iter`] produces. A vector function serves every run: contiguous ones directly (and a
//! contiguous input against a broadcast scalar), others (strided, broadcast) gathered through a
//! stack buffer. float16 and bfloat16 runs are widened to
//! f32 buffers a chunk at a time, computed there (by the vector function, or the scalar one in a
//! loop the compiler vectorises) and narrowed back (`widened`); bfloat16 runs without a vector
//! function convert inside the scalar function's own loop where they are contiguous. Without a
//! vector function, contiguous runs and runs where an input is a broadcast scalar get loops the
//! compiler vectorises, chunked through a stack buffer when the output is an input (in place);
//! anything else is a strided loop. Every loop body runs in the CPU's vector tier (`tiered`).
//! Operand 0 is the output.

use std::mem::MaybeUninit;

use crate::dispatch_all;
use half::f16;

use crate::engine::dtype::{DType, Element, Half, LANES, cast};
use crate::engine::iter::{Iter, Operand};

/// Whether a run of operand `k` is contiguous for elements of `T`.
#[inline(always)]
fn dense<T>(stride: isize) -> bool {
    stride == std::mem::size_of::<T>() as isize
}

/// A vectorised function over `n` contiguous elements (`x` may equal `out`).
pub type Vector<T> = unsafe fn(*const T, *mut T, usize);

/// A vectorised function of two inputs over `n` contiguous elements (`out` may equal either).
pub type Vector2<T> = unsafe fn(*const T, *const T, *mut T, usize);

/// `out = f(a)` over every element.
pub fn unary<A: Copy + Send + Sync, O: Copy + Send + Sync>(it: &Iter, f: impl Fn(A) -> O + Sync + Copy) {
    it.for_each(move |p, s, n| {
        let (o, a) = (p[0].cast::<O>(), p[1].cast::<A>().cast_const());
        // SAFETY: the iterator hands out runs of `n` elements inside both operands; writes go to
        // the output only, element k after reading element k (so in-place is fine).
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    if dense::<O>(s[0]) && dense::<A>(s[1]) {
                        let inputs = [a.cast::<u8>()];
                        run_dense(
                            o,
                            n,
                            inputs,
                            [size_of::<A>()],
                            #[inline(always)]
                            move |k| f(a.add(k).read()),
                        );
                    } else if dense::<O>(s[0]) && s[1] == -(size_of::<A>() as isize) {
                        // A reversed input (flip of the innermost dimension): with the stride
                        // a constant the compiler loads whole vectors and reverses them in
                        // registers, where the strided loop below reads an element at a time
                        // (`flip` of rows took 1.7x CPU's time).
                        for k in 0..n {
                            o.add(k).write(f(a.sub(k).read()));
                        }
                    } else {
                        let (so, sa) = (s[0], s[1]);
                        let (o, a) = (o.cast::<u8>(), a.cast::<u8>());
                        for k in 0..n as isize {
                            let x = a.offset(k * sa).cast::<A>().read_unaligned();
                            o.offset(k * so).cast::<O>().write_unaligned(f(x));
                        }
                    }
                },
            )
        }
    });
}

/// `out = f(a)`, with `vector` for every run when there is one: contiguous runs are passed to it
/// as they are (it may be called with `a == out`); strided runs are gathered into a stack buffer
/// a chunk at a time, run through it there and scattered back, so a row computes the same
/// values whatever the layout. `f` serves only when there is no vector function.
pub fn unary_vec<T: Copy + Send + Sync>(it: &Iter, f: impl Fn(T) -> T + Sync + Copy, vector: Option<Vector<T>>) {
    match vector {
        // SAFETY: `through` passes `m` readable and `m` writable elements.
        Some(v) => through::<T, 1>(it, move |[a], out, m| unsafe { v(a, out, m) }),
        None => unary::<T, T>(it, f),
    }
}

/// `out = f(a)` for float16 or bfloat16, computed in f32 through `widened`'s buffers: by the
/// f32 `vector` function when there is one (so the halves get the f32 polynomials instead of a
/// libm call per element), else by `f` over the buffer, a loop the compiler vectorises.
pub fn unary_widened<T: Half>(
    it: &Iter,
    f: impl Fn(f32) -> f32 + Sync + Copy,
    vector: Option<Vector<f32>>,
    lanes: bool,
) {
    match vector {
        // SAFETY: `widened` passes `m` readable and `m` writable elements.
        Some(v) => widened::<T, 1>(it, |_, _, _, _| false, move |[a], out, m| unsafe { v(a, out, m) }),
        None => nary_widened::<T, 1>(
            it,
            #[inline(always)]
            move |[x]| f(x),
            lanes,
        ),
    }
}

/// Every run of `out = vector(inputs)` for a vector function of `N` inputs (`call` adapts a
/// [`Vector`] or [`Vector2`]): runs where every operand is contiguous go to it directly; others a
/// [`WIDEN`] chunk at a time, each input from where it lies (a contiguous one as it is, a
/// broadcast scalar from a buffer of its copies filled once per run, a strided one gathered
/// element by element into a buffer) and the output written in place when contiguous, else into
/// a buffer scattered back. So a row computes the same values whatever the layout, and in place
/// is fine: each chunk's inputs are read before its output is written. (Gathering a contiguous
/// input or a scalar's copies into buffers for every chunk took a quarter of float32
/// `x.pow(2.5)`'s time.)
fn through<T: Copy + Send + Sync, const N: usize>(
    it: &Iter,
    call: impl Fn([*const T; N], *mut T, usize) + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let o = p[0].cast::<T>();
        let ins: [*const T; N] = std::array::from_fn(|j| p[j + 1].cast::<T>().cast_const());
        // SAFETY: the iterator hands out runs of `n` elements inside every operand (a broadcast
        // scalar's one element); the vector function gets `m` readable elements of each input
        // and `m` writable ones of the output, which may equal a contiguous input exactly.
        unsafe {
            if (0..=N).all(|j| dense::<T>(s[j])) {
                return call(ins, o, n);
            }
            tiered(
                #[inline(always)]
                move || {
                    let mut bufs = [const { Aligned([const { MaybeUninit::<T>::uninit() }; WIDEN]) }; N];
                    let mut out = Aligned([const { MaybeUninit::<T>::uninit() }; WIDEN]);
                    for j in 0..N {
                        if s[j + 1] == 0 {
                            let v = ins[j].read_unaligned();
                            bufs[j].0[..n.min(WIDEN)].iter_mut().for_each(|slot| _ = slot.write(v));
                        }
                    }
                    let mut i = 0;
                    while i < n {
                        let m = (n - i).min(WIDEN);
                        let srcs: [*const T; N] = std::array::from_fn(|j| {
                            if dense::<T>(s[j + 1]) {
                                return ins[j].add(i);
                            }
                            let buf = bufs[j].0.as_mut_ptr().cast::<T>();
                            if s[j + 1] != 0 {
                                for k in 0..m {
                                    *buf.add(k) = at(ins[j], s[j + 1], i + k);
                                }
                            }
                            buf.cast_const()
                        });
                        if dense::<T>(s[0]) {
                            call(srcs, o.add(i), m);
                        } else {
                            let w = out.0.as_mut_ptr().cast::<T>();
                            call(srcs, w, m);
                            store_strided(o, s[0], i, std::slice::from_raw_parts(w, m), |x| x);
                        }
                        i += m;
                    }
                },
            )
        }
    });
}

/// Element `k` of a run at byte stride `stride`.
///
/// # Safety
/// The run holds element `k`.
#[inline(always)]
unsafe fn at<T: Copy>(p: *const T, stride: isize, k: usize) -> T {
    // SAFETY: per the contract.
    unsafe { p.cast::<u8>().offset(k as isize * stride).cast::<T>().read_unaligned() }
}

/// Writes a buffer's results `w`, narrowed, to elements `i..` of an output at byte stride `so`.
///
/// # Safety
/// The output holds elements `i..i + w.len()` at that stride.
#[inline(always)]
unsafe fn store_strided<T, W: Copy>(o: *mut T, so: isize, i: usize, w: &[W], narrow: impl Fn(W) -> T) {
    for (k, &x) in w.iter().enumerate() {
        // SAFETY: per the contract.
        unsafe { o.cast::<u8>().offset((i + k) as isize * so).cast::<T>().write_unaligned(narrow(x)) };
    }
}

/// Elements per chunk of a run through a vector function's buffers ([`through`], [`widened`]:
/// 1 KiB of f32, long enough that the call is a small part of the time).
const WIDEN: usize = 256;

/// `out = f(a, b)` over every element.
pub fn binary<A: Copy + Send + Sync, B: Copy + Send + Sync, O: Copy + Send + Sync>(
    it: &Iter,
    f: impl Fn(A, B) -> O + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let (o, a, b) = (p[0].cast::<O>(), p[1].cast::<A>().cast_const(), p[2].cast::<B>().cast_const());
        let inputs = [a.cast::<u8>(), b.cast::<u8>()];
        // SAFETY: as in `unary`.
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    if dense::<O>(s[0]) && dense::<A>(s[1]) && dense::<B>(s[2]) {
                        let sizes = [size_of::<A>(), size_of::<B>()];
                        run_dense(
                            o,
                            n,
                            inputs,
                            sizes,
                            #[inline(always)]
                            move |k| f(a.add(k).read(), b.add(k).read()),
                        );
                    } else if dense::<O>(s[0]) && dense::<A>(s[1]) && s[2] == 0 {
                        let y = b.read_unaligned();
                        let sizes = [size_of::<A>(), 0];
                        run_dense(
                            o,
                            n,
                            inputs,
                            sizes,
                            #[inline(always)]
                            move |k| f(a.add(k).read(), y),
                        );
                    } else if dense::<O>(s[0]) && s[1] == 0 && dense::<B>(s[2]) {
                        let x = a.read_unaligned();
                        let sizes = [0, size_of::<B>()];
                        run_dense(
                            o,
                            n,
                            inputs,
                            sizes,
                            #[inline(always)]
                            move |k| f(x, b.add(k).read()),
                        );
                    } else {
                        let (o, a, b) = (o.cast::<u8>(), a.cast::<u8>(), b.cast::<u8>());
                        for k in 0..n as isize {
                            let x = a.offset(k * s[1]).cast::<A>().read_unaligned();
                            let y = b.offset(k * s[2]).cast::<B>().read_unaligned();
                            o.offset(k * s[0]).cast::<O>().write_unaligned(f(x, y));
                        }
                    }
                },
            )
        }
    });
}

/// `out = f(a, b)`, with `vector` for every run when there is one, as [`unary_vec`]: runs where
/// every operand is contiguous, or contiguous against a broadcast scalar, are passed to it as
/// they are (the scalar from a buffer of its copies); others (strided runs) are gathered into stack
/// buffers a chunk at a time, run through it there and scattered back.
pub fn binary_vec<T: Copy + Send + Sync>(it: &Iter, f: impl Fn(T, T) -> T + Sync + Copy, vector: Option<Vector2<T>>) {
    match vector {
        // SAFETY: as for `unary_vec`.
        Some(v) => through::<T, 2>(it, move |[a, b], out, m| unsafe { v(a, b, out, m) }),
        None => binary::<T, T, T>(it, f),
    }
}

/// `out = f(a, b)` for float16 or bfloat16, as [`unary_widened`] (both inputs widened).
pub fn binary_widened<T: Half>(
    it: &Iter,
    f: impl Fn(f32, f32) -> f32 + Sync + Copy,
    vector: Option<Vector2<f32>>,
    lanes: bool,
) {
    match vector {
        // SAFETY: `widened` passes `m` readable elements of each input and `m` writable ones.
        Some(v) => widened::<T, 2>(it, |_, _, _, _| false, move |[a, b], out, m| unsafe { v(a, b, out, m) }),
        None => nary_widened::<T, 2>(
            it,
            #[inline(always)]
            move |[x, y]| f(x, y),
            lanes,
        ),
    }
}

/// `out = f([a, b, ...])` for `N` float16 or bfloat16 inputs, as [`unary_widened`]. Where the
/// conversions vectorise ([`Half::FUSES`]: bfloat16), a contiguous run (broadcast scalars
/// allowed) converts inside the row's own loop, as [`nary`]'s: one pass over memory instead of
/// three over buffers (bfloat16 `div` took 1.30-1.37x CPU's time through them, 1.04-1.09x so;
/// in a test binary, 1M elements: `div` 30% and `x * x` 17% less time). float16 runs, in any
/// layout, compute sixteen lanes in registers (`loops::lanes`) when `lanes` is true (`dispatch::lanes`
/// of the op's name: not a row whose function branches), else through the buffers.
pub fn nary_widened<T: Half, const N: usize>(it: &Iter, f: impl Fn([f32; N]) -> f32 + Sync + Copy, lanes: bool) {
    let use_lanes = lanes; // `lanes` is also the function below
    widened::<T, N>(
        it,
        #[inline(always)]
        move |o, ins, s, n| {
            // SAFETY: `widened` passes a run's operands.
            unsafe {
                if !T::FUSES {
                    if use_lanes {
                        self::lanes(o, ins, s, n, f);
                    }
                    return use_lanes;
                }
                contiguous(
                    o,
                    ins,
                    s,
                    n,
                    #[inline(always)]
                    move |x: [T; N]| T::from_acc(f(x.map(|v| v.to_acc()))),
                )
            }
        },
        #[inline(always)]
        move |ins, out, m| {
            // SAFETY: `widened` passes `m` readable elements of each input and its own output
            // buffer of `m`.
            unsafe { apply(out, m, |k| f(ins.map(|p| p.add(k).read()))) }
        },
    )
}

/// One run of [`nary_widened`] for float16, any layout, [`LANES`] elements at a time in
/// registers: each input is widened by [`Half::widen_lanes`] (a contiguous input where it lies,
/// a strided one from its elements gathered, a broadcast scalar once), the row's function is
/// applied lane by lane, which the compiler turns into vector code, and the results are narrowed
/// by [`Half::narrow_lanes`]; the last partial block is padded with zeros. Against `widened`'s
/// three passes over f32 buffers, one pass over memory: `x * x`, `floor` and a select such as
/// relu's in half the time when the data is in cache (`nary_widened`'s reason for bfloat16).
/// The compiler vectorises the lanes only where the row's function is straight-line code or
/// single selects (`if c { a } else { b }` with cheap arms); a `||` between float compares
/// or an `if` around a call stays a branch per lane, several times slower (relu written with
/// `x.is_nan() || x > 0` took 6x the buffered path's time), so the scalar functions are written
/// as selects, and the rows that branch on their argument stay on the buffers
/// (`dispatch::BUFFERED`).
///
/// # Safety
/// The run's operands hold `n` elements at strides `s` (operand 0 the output); each block's
/// inputs are read before its output is written.
#[inline(always)]
pub(crate) unsafe fn lanes<T: Half, const N: usize>(
    o: *mut T,
    ins: [*const T; N],
    s: &[isize],
    n: usize,
    f: impl Fn([f32; N]) -> f32 + Copy,
) {
    // SAFETY: per the contract.
    unsafe {
        // No closures and no `array::from_fn` here: a closure is compiled as a function of its
        // own, without the tier's features, so the conversions in it would be calls.
        let mut splat = [[0.0; LANES]; N];
        for j in 0..N {
            if s[j + 1] == 0 {
                splat[j] = [ins[j].read_unaligned().to_acc(); LANES];
            }
        }
        let zero = T::from_acc(0.0);
        let mut x = splat;
        let mut i = 0;
        if dense::<T>(s[0]) && (1..=N).all(|j| dense::<T>(s[j]) || s[j] == 0) {
            while i + LANES <= n {
                for j in 0..N {
                    if s[j + 1] != 0 {
                        x[j] = T::widen_lanes(ins[j].add(i));
                    }
                }
                T::narrow_lanes(by_lanes(f, &x), o.add(i));
                i += LANES;
            }
        }
        // Strided operands, and the last partial block: each input's block gathered (padded
        // with zeros), the results written element by element.
        while i < n {
            let m = (n - i).min(LANES);
            for j in 0..N {
                if s[j + 1] != 0 {
                    let mut g = [zero; LANES];
                    for (k, slot) in g.iter_mut().enumerate().take(m) {
                        *slot = at(ins[j], s[j + 1], i + k);
                    }
                    x[j] = T::widen_lanes(g.as_ptr());
                }
            }
            let mut r = [zero; LANES];
            T::narrow_lanes(by_lanes(f, &x), r.as_mut_ptr());
            store_strided(o, s[0], i, &r[..m], |v| v);
            i += m;
        }
    }
}

/// `f` of each lane of `x` (lane `k` of every input).
#[inline(always)]
fn by_lanes<const N: usize>(f: impl Fn([f32; N]) -> f32, x: &[[f32; LANES]; N]) -> [f32; LANES] {
    let mut r = [0.0; LANES];
    for (k, r) in r.iter_mut().enumerate() {
        let mut lane = [0.0; N];
        for (j, v) in lane.iter_mut().enumerate() {
            *v = x[j][k];
        }
        *r = f(lane);
    }
    r
}

/// `out[k] = f(k)` for `k < m` into a buffer of [`widened`] (a `&mut` slice, so the compiler
/// knows the stores alias none of the loads).
///
/// # Safety
/// `out` holds `m` writable elements that nothing else refers to during the call.
#[inline(always)]
unsafe fn apply(out: *mut f32, m: usize, f: impl Fn(usize) -> f32) {
    // SAFETY: per the contract.
    fill(unsafe { std::slice::from_raw_parts_mut(out.cast::<MaybeUninit<f32>>(), m) }, 0, &f)
}

/// Runs `compute(inputs, out, m)` over float16 or bfloat16 operands (output and `N` inputs)
/// through f32 stack buffers, for each run that `first(out, inputs, strides, n)` did not take
/// (it returns whether it computed the run), [`WIDEN`] elements at a time: each input is widened
/// into its buffer (a contiguous run by [`Half::widen`], the CPU's conversion instructions for
/// float16; a strided one element by element; a broadcast scalar once per run), `compute` fills
/// the output buffer from them, and that is narrowed back ([`Half::narrow`] when the output is
/// contiguous).
/// Every layout goes through the same `compute`, so a row computes the same values whatever the
/// layout; in place is fine, as each chunk is read before it is written. (Converting element by
/// element inside the row's loop took about fifteen vector instructions per conversion for
/// float16: 2-6x CPU's time.)
fn widened<T: Half, const N: usize>(
    it: &Iter,
    first: impl Fn(*mut T, [*const T; N], &[isize], usize) -> bool + Sync + Copy,
    compute: impl Fn([*const f32; N], *mut f32, usize) + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let o = p[0].cast::<T>();
        let ins: [*const T; N] = std::array::from_fn(|j| p[j + 1].cast::<T>().cast_const());
        // SAFETY: the iterator hands out runs of `n` elements inside every operand; each chunk's
        // inputs are read into the buffers before its output is written.
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    if first(o, ins, s, n) {
                        return;
                    }
                    let mut bufs = [const { Aligned([const { MaybeUninit::<f32>::uninit() }; WIDEN]) }; N];
                    let mut out = Aligned([const { MaybeUninit::<f32>::uninit() }; WIDEN]);
                    for j in 0..N {
                        if s[j + 1] == 0 {
                            let x = ins[j].read_unaligned().to_acc();
                            bufs[j].0.iter_mut().for_each(|slot| _ = slot.write(x));
                        }
                    }
                    let mut i = 0;
                    while i < n {
                        let m = (n - i).min(WIDEN);
                        for j in 0..N {
                            let buf = bufs[j].0.as_mut_ptr().cast::<f32>();
                            if dense::<T>(s[j + 1]) {
                                T::widen(ins[j].add(i), buf, m);
                            } else if s[j + 1] != 0 {
                                for k in 0..m {
                                    *buf.add(k) = at(ins[j], s[j + 1], i + k).to_acc();
                                }
                            }
                        }
                        let out = out.0.as_mut_ptr().cast::<f32>();
                        compute(std::array::from_fn(|j| bufs[j].0.as_ptr().cast::<f32>()), out, m);
                        if dense::<T>(s[0]) {
                            T::narrow(out, o.add(i), m);
                        } else {
                            store_strided(o, s[0], i, std::slice::from_raw_parts(out, m), T::from_acc);
                        }
                        i += m;
                    }
                },
            )
        }
    });
}

/// A two-input vector function made of a lane function that is exact on the lanes it does not
/// flag (`fast`, selects that vectorise) and a scalar one for the flagged lanes (`exact`, a libm
/// call): `out = fast(a, b)` over `n` contiguous elements, compiled for the vector tier in force
/// (`tiered`), `CHUNK` (64) at a time into a stack buffer where the chunk's flagged lanes, if any,
/// are recomputed by `exact` before it is stored, so `out` may be `a` or `b` (in place). For rows
/// whose libm function is exact and slow but has a cheap exact form on all but rare inputs
/// (`scalar::fmod_checked`).
///
/// # Safety
/// `a`, `b` and `out` point to `n` valid elements; `out` may equal `a` or `b` exactly, no other
/// overlap.
#[inline(always)]
pub unsafe fn checked2<T: Copy + Default>(
    a: *const T,
    b: *const T,
    out: *mut T,
    n: usize,
    fast: impl Fn(T, T) -> (T, bool) + Copy,
    exact: impl Fn(T, T) -> T + Copy,
) {
    // SAFETY: the caller's contract: the reads and writes below stay within `n` elements.
    unsafe {
        tiered(
            #[inline(always)]
            move || {
                let (mut r, mut flags) = (Aligned([T::default(); CHUNK]), [false; CHUNK]);
                let r = &mut r.0;
                let mut i = 0;
                while i < n {
                    let m = (n - i).min(CHUNK);
                    for k in 0..m {
                        // In bounds: i + k < n elements of both inputs are readable.
                        (r[k], flags[k]) = fast(a.add(i + k).read(), b.add(i + k).read());
                    }
                    if flags[..m].contains(&true) {
                        for k in 0..m {
                            if flags[k] {
                                // `out` is not written before the chunk is stored.
                                r[k] = exact(a.add(i + k).read(), b.add(i + k).read());
                            }
                        }
                    }
                    // i + m <= n elements of out are writable; the chunk's inputs were read.
                    std::ptr::copy_nonoverlapping(r.as_ptr(), out.add(i), m);
                    i += m;
                }
            },
        )
    }
}

/// `out = f(a, b, c)` over every element.
pub fn ternary<A: Copy + Send + Sync, B: Copy + Send + Sync, C: Copy + Send + Sync, O: Copy + Send + Sync>(
    it: &Iter,
    f: impl Fn(A, B, C) -> O + Sync + Copy,
) {
    it.for_each(move |p, s, n| {
        let (o, a, b, c) = (p[0], p[1].cast_const(), p[2].cast_const(), p[3].cast_const());
        // SAFETY: as in `unary`.
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    if dense::<O>(s[0]) && dense::<A>(s[1]) && dense::<B>(s[2]) && dense::<C>(s[3]) {
                        let (o, a, b, c) = (o.cast::<O>(), a.cast::<A>(), b.cast::<B>(), c.cast::<C>());
                        let inputs = [a.cast::<u8>(), b.cast::<u8>(), c.cast::<u8>()];
                        let sizes = [size_of::<A>(), size_of::<B>(), size_of::<C>()];
                        run_dense(
                            o,
                            n,
                            inputs,
                            sizes,
                            #[inline(always)]
                            move |k| f(a.add(k).read(), b.add(k).read(), c.add(k).read()),
                        );
                    } else {
                        for k in 0..n as isize {
                            let x = a.offset(k * s[1]).cast::<A>().read_unaligned();
                            let y = b.offset(k * s[2]).cast::<B>().read_unaligned();
                            let z = c.offset(k * s[3]).cast::<C>().read_unaligned();
                            o.offset(k * s[0]).cast::<O>().write_unaligned(f(x, y, z));
                        }
                    }
                },
            )
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
        // SAFETY: as in `unary`.
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    if !contiguous(o, ins, s, n, f) {
                        let o = o.cast::<u8>();
                        for k in 0..n as isize {
                            let x: [T; N] = std::array::from_fn(|j| {
                                ins[j].cast::<u8>().offset(k * s[j + 1]).cast::<T>().read_unaligned()
                            });
                            o.offset(k * s[0]).cast::<O>().write_unaligned(f(x));
                        }
                    }
                },
            )
        }
    });
}

/// One run of [`nary`] when the output is contiguous and each input contiguous or a broadcast
/// scalar, in a loop the compiler vectorises; returns false (having done nothing) otherwise.
///
/// # Safety
/// The run's operands hold `n` elements at strides `s` (operand 0 the output).
#[inline(always)]
pub(crate) unsafe fn contiguous<T: Copy, O: Copy, const N: usize>(
    o: *mut O,
    ins: [*const T; N],
    s: &[isize],
    n: usize,
    f: impl Fn([T; N]) -> O + Copy,
) -> bool {
    if !dense::<O>(s[0]) || !(1..=N).all(|k| dense::<T>(s[k]) || s[k] == 0) {
        return false;
    }
    // SAFETY: per the contract.
    unsafe {
        if (1..=N).all(|k| dense::<T>(s[k])) {
            let inputs = ins.map(|a| a.cast::<u8>());
            run_dense(
                o,
                n,
                inputs,
                [size_of::<T>(); N],
                #[inline(always)]
                move |k| f(ins.map(|a| a.add(k).read())),
            );
            return true;
        }
        // The first input contiguous and every other one a broadcast scalar (clamp's bounds,
        // `x * 2` in bfloat16, threshold's values): the scalars are read once, and are constants
        // of the loop, so their conversions and checks (clamp's NaN bounds) leave it. Through
        // runs of copies (below), clamp_ in float32 took twice CPU's time.
        if dense::<T>(s[1]) && (2..=N).all(|k| s[k] == 0) {
            let values: [T; N] = std::array::from_fn(|j| ins[j].read_unaligned());
            let first = ins[0];
            let sizes = std::array::from_fn(|j| if j == 0 { size_of::<T>() } else { 0 });
            run_dense(
                o,
                n,
                ins.map(|a| a.cast::<u8>()),
                sizes,
                #[inline(always)]
                move |k| {
                    let mut x = values;
                    x[0] = first.add(k).read();
                    f(x)
                },
            );
            return true;
        }
        // Other broadcast scalars: each of those is read from a run of its copies, so every
        // input is contiguous in the loop.
        let copies: [[T; BROADCAST]; N] = std::array::from_fn(|j| [ins[j].read_unaligned(); BROADCAST]);
        let mut i = 0;
        while i < n {
            let m = (n - i).min(BROADCAST);
            let at: [*const T; N] =
                std::array::from_fn(|j| if s[j + 1] == 0 { copies[j].as_ptr() } else { ins[j].add(i) });
            let inputs = at.map(|a| a.cast::<u8>());
            let sizes = std::array::from_fn(|j| if s[j + 1] == 0 { 0 } else { size_of::<T>() });
            run_dense(
                o.add(i),
                m,
                inputs,
                sizes,
                #[inline(always)]
                move |k| f(at.map(|a| a.add(k).read())),
            );
            i += m;
        }
    }
    true
}

/// Runs [`Dense`] (its closure is `#[inline(always)]` at each call, so the row's function is
/// compiled into the tier's loop whatever its size; in a struct field it could not be marked).
///
/// # Safety
/// As [`Dense::run`].
#[inline(always)]
unsafe fn run_dense<O: Copy, F: Fn(usize) -> O, const N: usize>(
    out: *mut O,
    n: usize,
    inputs: [*const u8; N],
    sizes: [usize; N],
    f: F,
) {
    // SAFETY: forwarded contract.
    unsafe { Dense { out, n, inputs, sizes, f }.run() }
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
        let mut buf = Aligned([const { MaybeUninit::<O>::uninit() }; CHUNK]);
        let buf = &mut buf.0;
        let mut i = 0;
        // Whole chunks are copied out as one array of constant size, which compiles to a few
        // vector moves; a copy of a variable count was a call to memmove per chunk, which cost
        // a third of an in-place `mul_`.
        while i + CHUNK <= n {
            fill(buf, i, &f);
            // SAFETY: every slot was written; the output holds `CHUNK` elements at `i`.
            unsafe { out.add(i).cast::<[MaybeUninit<O>; CHUNK]>().write_unaligned(*buf) };
            i += CHUNK;
        }
        if i < n {
            // A buffer of its own: a copy of a variable count takes its buffer's address, which
            // kept the whole chunks' buffer on the stack too (stored, loaded and stored again)
            // instead of in registers.
            let mut tail = Aligned([const { MaybeUninit::<O>::uninit() }; CHUNK]);
            let m = n - i;
            fill(&mut tail.0[..m], i, &f);
            // SAFETY: the first `m` slots were written; the output holds them at `i`.
            unsafe { std::ptr::copy_nonoverlapping(tail.0.as_ptr().cast::<O>(), out.add(i), m) };
        }
    }
}

/// A stack buffer on a cache line of its own. The loops write a chunk of results into such a
/// buffer with vector stores and read it back with vector loads: unaligned, each 64-byte access
/// straddled two lines, the loads could not take their data from the stores in flight, and an
/// in-place `mul_` ran 3-5x slower than the same loop into another tensor.
#[repr(C, align(64))]
struct Aligned<A>(A);

/// `out[k] = f(first + k)`. A `&mut` slice, so the compiler knows the stores alias none of the
/// loads `f` makes and vectorises without a runtime overlap check (which it gave up on for some
/// rows).
#[inline(always)]
fn fill<O, F: Fn(usize) -> O>(out: &mut [MaybeUninit<O>], first: usize, f: &F) {
    for (k, slot) in out.iter_mut().enumerate() {
        slot.write(f(first + k));
    }
}

/// Runs a loop body compiled for the vector tier in force (AVX-512, AVX2+FMA, or baseline
/// x86-64: [`crate::engine::capability`]), so every table row's contiguous loop is vectorised by
/// the compiler, not only those with a hand-written vector function, and rounding (`floor`,
/// `round`) and fused multiply-adds (`mul_add`, which vmath's lane functions use) are one
/// instruction instead of a libm call, in strided loops too. The tiers compute the same values:
/// Rust never reassociates or contracts float arithmetic, so only the number of lanes changes.
/// The body is `#[inline(always)]` at each call, so it is compiled inside each tier's function.
///
/// # Safety
/// The body's own contract (it is run once).
#[inline(always)]
pub(crate) unsafe fn tiered(body: impl FnOnce()) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx,avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")]
        unsafe fn avx512(body: impl FnOnce()) {
            body()
        }
        #[target_feature(enable = "avx,avx2,fma,f16c")]
        unsafe fn avx2(body: impl FnOnce()) {
            body()
        }
        if crate::engine::has_avx512() {
            // SAFETY: the features were detected; forwarded contract.
            return unsafe { avx512(body) };
        }
        if crate::engine::has_avx2() {
            // SAFETY: as above.
            return unsafe { avx2(body) };
        }
    }
    body()
}

/// Copies `src` (any strides, broadcast to `dst`'s shape) into `dst`, converting the dtype.
///
/// # Safety
/// Both operands describe live memory; `dst` is writable and does not partially overlap `src`.
pub unsafe fn copy_cast(src: &Operand, dst: &Operand) {
    let it = Iter::new(std::slice::from_ref(dst), std::slice::from_ref(src), &dst.sizes);
    match (src.dtype, dst.dtype) {
        (DType::F16, to) if to != DType::F16 => dispatch_all!(to, |D| from_half::<D>(&it)),
        (from, DType::F16) if from != DType::F16 => dispatch_all!(from, |S| to_half::<S>(&it)),
        _ => dispatch_all!(src.dtype, |S| dispatch_all!(dst.dtype, |D| unary::<S, D>(&it, cast::<S, D>))),
    }
}

/// [`copy_cast`] from float16: [`LANES`] elements at a time widened by the conversion
/// instructions ([`Half::widen_lanes`]; element by element, `.float()` of a float16 tensor took
/// 2.9x CPU's time), then converted from f32, which holds every float16 exactly, so each element
/// converts as `cast` does it.
fn from_half<D: Element>(it: &Iter) {
    it.for_each(move |p, s, n| {
        let (o, a) = (p[0].cast::<D>(), p[1].cast::<f16>().cast_const());
        // SAFETY: the iterator hands out runs of `n` elements inside both operands, which do not
        // partially overlap ([`copy_cast`]'s contract).
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    let mut i = 0;
                    while i < n {
                        let m = (n - i).min(LANES);
                        let x = if m == LANES && dense::<f16>(s[1]) {
                            f16::widen_lanes(a.add(i))
                        } else {
                            let mut g = [f16::ZERO; LANES];
                            for (k, g) in g.iter_mut().enumerate().take(m) {
                                *g = at(a, s[1], i + k);
                            }
                            f16::widen_lanes(g.as_ptr())
                        };
                        if m == LANES && dense::<D>(s[0]) {
                            let mut r = [D::zero(); LANES];
                            for (r, &x) in r.iter_mut().zip(&x) {
                                *r = cast::<f32, D>(x);
                            }
                            o.add(i).cast::<[D; LANES]>().write_unaligned(r);
                        } else {
                            store_strided(o, s[0], i, &x[..m], cast::<f32, D>);
                        }
                        i += m;
                    }
                },
            )
        }
    });
}

/// [`copy_cast`] to float16: each element converted to f32 as `cast` does it on the way (C++'s
/// conversion to c10::Half goes through float), [`LANES`] at a time narrowed by the conversion
/// instructions ([`Half::narrow_lanes`]).
fn to_half<S: Element>(it: &Iter) {
    it.for_each(move |p, s, n| {
        let (o, a) = (p[0].cast::<f16>(), p[1].cast::<S>().cast_const());
        // SAFETY: as in `from_half`.
        unsafe {
            tiered(
                #[inline(always)]
                move || {
                    let mut i = 0;
                    while i < n {
                        let m = (n - i).min(LANES);
                        let mut x = [0.0f32; LANES];
                        if m == LANES && dense::<S>(s[1]) {
                            for (k, x) in x.iter_mut().enumerate() {
                                *x = cast::<S, f32>(a.add(i + k).read());
                            }
                        } else {
                            for (k, x) in x.iter_mut().enumerate().take(m) {
                                *x = cast::<S, f32>(at(a, s[1], i + k));
                            }
                        }
                        if m == LANES && dense::<f16>(s[0]) {
                            f16::narrow_lanes(x, o.add(i));
                        } else {
                            let mut r = [f16::ZERO; LANES];
                            f16::narrow_lanes(x, r.as_mut_ptr());
                            store_strided(o, s[0], i, &r[..m], |v| v);
                        }
                        i += m;
                    }
                },
            )
        }
    });
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
    fn vector_functions_serve_strided_and_half_runs() {
        use half::{bf16, f16};
        // Longer than a widened chunk, not a multiple of it; in place and out of place.
        let n = 2 * WIDEN + 37;
        let s = [n as i64];
        let xs: Vec<f32> = (0..n).map(|k| (k as f32 - 300.0) * 0.05).collect();
        let exp = crate::math::vmath::exp_f32_raw as Vector<f32>;
        // The scalar function is never used on contiguous runs: a wrong one shows.
        fn wrong<T>(x: T) -> T {
            x
        }
        fn check<H: Half>(xs: &[f32], s: &[i64], exp: Vector<f32>) {
            let src: Vec<H> = xs.iter().map(|&x| H::from_acc(x)).collect();
            let want: Vec<H> =
                src.iter().map(|&x| H::from_acc(crate::math::vmath::exp_scalar_f32(x.to_acc()))).collect();
            let (mut a, mut out) = (src.clone(), src.clone());
            let it = Iter::new(
                &[Operand::over(&mut out, s, &[1], H::DTYPE)],
                &[Operand::over(&mut a, s, &[1], H::DTYPE)],
                s,
            );
            unary_widened::<H>(&it, wrong, Some(exp), true);
            assert_eq!(out, want);
            let mut data = src.clone();
            let ptr = data.as_mut_ptr();
            let it = Iter::new(
                &[Operand { data: ptr.cast(), ..Operand::over(&mut data, s, &[1], H::DTYPE) }],
                &[Operand { data: ptr.cast(), ..Operand::over(&mut Vec::<H>::new(), s, &[1], H::DTYPE) }],
                s,
            );
            unary_widened::<H>(&it, wrong, Some(exp), true);
            assert_eq!(data, want);
            // Strided: every other element, gathered through the buffer.
            let mut spread: Vec<H> = src.iter().flat_map(|&x| [x, H::zero()]).collect();
            let mut out = vec![H::zero(); src.len()];
            let it = Iter::new(
                &[Operand::over(&mut out, s, &[1], H::DTYPE)],
                &[Operand::over(&mut spread, s, &[2], H::DTYPE)],
                s,
            );
            unary_widened::<H>(&it, wrong, Some(exp), true);
            assert_eq!(out, want);
        }
        check::<bf16>(&xs, &s, exp);
        check::<f16>(&xs, &s, exp);
        // float32, strided: the vector function's values (bit-identical to its scalar form).
        let mut spread: Vec<f32> = xs.iter().flat_map(|&x| [x, 0.0]).collect();
        let mut out = vec![0f32; n];
        let it = Iter::new(
            &[Operand::over(&mut out, &s, &[1], DType::F32)],
            &[Operand::over(&mut spread, &s, &[2], DType::F32)],
            &s,
        );
        unary_vec::<f32>(&it, wrong, Some(exp));
        assert!(out.iter().zip(&xs).all(|(&y, &x)| y.to_bits() == crate::math::vmath::exp_scalar_f32(x).to_bits()));
    }

    #[test]
    fn half_rows_without_a_vector_function_compute_in_f32_in_every_layout() {
        use half::{bf16, f16};
        // out = a * b + c, rounded once from f32, over runs longer than a chunk: contiguous;
        // in place, `b` strided and `c` a broadcast scalar; in place, `c` broadcast. float16
        // through the buffers and by lanes (a last partial block too: 533 = 33 * 16 + 5).
        fn check<H: Half>(lanes: bool) {
            let n = 2 * WIDEN + 21;
            let s = [n as i64];
            let f = |[a, b, c]: [f32; 3]| a * b + c;
            let xs: Vec<H> = (0..n).map(|k| H::from_acc(k as f32 * 0.37 - 90.0)).collect();
            let ys: Vec<H> = (0..n).map(|k| H::from_acc((k % 13) as f32 * 0.11 + 0.5)).collect();
            let c = H::from_acc(1.25);
            let want: Vec<H> =
                xs.iter().zip(&ys).map(|(x, y)| H::from_acc(f([x.to_acc(), y.to_acc(), c.to_acc()]))).collect();
            let (mut a, mut b, mut cs, mut out) = (xs.clone(), ys.clone(), vec![c; n], vec![H::zero(); n]);
            let it = Iter::new(
                &[Operand::over(&mut out, &s, &[1], H::DTYPE)],
                &[
                    Operand::over(&mut a, &s, &[1], H::DTYPE),
                    Operand::over(&mut b, &s, &[1], H::DTYPE),
                    Operand::over(&mut cs, &s, &[1], H::DTYPE),
                ],
                &s,
            );
            nary_widened::<H, 3>(&it, f, lanes);
            assert_eq!(out, want);
            let mut spread: Vec<H> = ys.iter().flat_map(|&y| [y, H::zero()]).collect();
            let mut one = [c];
            let mut data = xs.clone();
            let ptr = data.as_mut_ptr();
            let it = Iter::new(
                &[Operand { data: ptr.cast(), ..Operand::over(&mut data, &s, &[1], H::DTYPE) }],
                &[
                    Operand { data: ptr.cast(), ..Operand::over(&mut Vec::<H>::new(), &s, &[1], H::DTYPE) },
                    Operand::over(&mut spread, &s, &[2], H::DTYPE),
                    Operand::over(&mut one, &s, &[0], H::DTYPE),
                ],
                &s,
            );
            nary_widened::<H, 3>(&it, f, lanes);
            assert_eq!(data, want);
            // In place on `a`, `b` contiguous and `c` broadcast: bfloat16 converts inside the
            // row's loop here ([`Half::FUSES`]), float16 by lanes or through the buffers, to the
            // same values.
            let mut data = xs.clone();
            let mut b = ys.clone();
            let ptr = data.as_mut_ptr();
            let it = Iter::new(
                &[Operand { data: ptr.cast(), ..Operand::over(&mut data, &s, &[1], H::DTYPE) }],
                &[
                    Operand { data: ptr.cast(), ..Operand::over(&mut Vec::<H>::new(), &s, &[1], H::DTYPE) },
                    Operand::over(&mut b, &s, &[1], H::DTYPE),
                    Operand::over(&mut one, &s, &[0], H::DTYPE),
                ],
                &s,
            );
            nary_widened::<H, 3>(&it, f, lanes);
            assert_eq!(data, want);
        }
        for lanes in [false, true] {
            check::<f16>(lanes);
            check::<bf16>(lanes);
        }
    }

    #[test]
    fn two_input_vector_functions_serve_every_layout() {
        use half::bf16;
        // A stand-in vector function: out = 2a - b, computed one element at a time; the loops'
        // scalar function is never used when there is one, so a wrong one shows.
        unsafe fn twice_minus(a: *const f32, b: *const f32, out: *mut f32, n: usize) {
            for k in 0..n {
                // SAFETY: the caller's run holds n elements of each; out may equal a or b.
                unsafe { out.add(k).write(2.0 * a.add(k).read() - b.add(k).read()) };
            }
        }
        fn wrong<T>(x: T, _: T) -> T {
            x
        }
        let n = 2 * WIDEN + 19;
        let s = [n as i64];
        let xs: Vec<f32> = (0..n).map(|k| k as f32 * 0.5 - 100.0).collect();
        let ys: Vec<f32> = (0..n).map(|k| (k % 7) as f32).collect();
        let want: Vec<f32> = xs.iter().zip(&ys).map(|(&x, &y)| 2.0 * x - y).collect();
        // `twice_minus` through binary_vec, each operand a slice and its stride in elements.
        let run = |(out, so): (&mut [f32], i64), (a, sa): (&mut [f32], i64), (b, sb): (&mut [f32], i64)| {
            let it = Iter::new(
                &[Operand::over(out, &s, &[so], DType::F32)],
                &[Operand::over(a, &s, &[sa], DType::F32), Operand::over(b, &s, &[sb], DType::F32)],
                &s,
            );
            binary_vec::<f32>(&it, wrong, Some(twice_minus));
        };
        // Contiguous, then `a` strided (every other element) and `b` a broadcast scalar.
        let (mut a, mut b, mut out) = (xs.clone(), ys.clone(), vec![0f32; n]);
        run((&mut out, 1), (&mut a, 1), (&mut b, 1));
        assert_eq!(out, want);
        let mut spread: Vec<f32> = xs.iter().flat_map(|&x| [x, 0.0]).collect();
        let mut three = [3.0f32];
        run((&mut out, 1), (&mut spread, 2), (&mut three, 0));
        assert!(out.iter().zip(&xs).all(|(&o, &x)| o == 2.0 * x - 3.0));
        // A contiguous input against a broadcast scalar, either way round, and a strided output
        // (written through a buffer) of contiguous inputs.
        run((&mut out, 1), (&mut a, 1), (&mut three, 0));
        assert!(out.iter().zip(&xs).all(|(&o, &x)| o == 2.0 * x - 3.0));
        run((&mut out, 1), (&mut three, 0), (&mut b, 1));
        assert!(out.iter().zip(&ys).all(|(&o, &y)| o == 6.0 - y));
        let mut wide_out = vec![0f32; 2 * n];
        run((&mut wide_out, 2), (&mut a, 1), (&mut b, 1));
        assert!(wide_out.iter().step_by(2).eq(&want) && wide_out.iter().skip(1).step_by(2).all(|&o| o == 0.0));
        // In place, against a broadcast scalar.
        let ptr = a.as_mut_ptr();
        let it = Iter::new(
            &[Operand { data: ptr.cast(), ..Operand::over(&mut out, &s, &[1], DType::F32) }],
            &[Operand::over(&mut a, &s, &[1], DType::F32), Operand::over(&mut three, &s, &[0], DType::F32)],
            &s,
        );
        binary_vec::<f32>(&it, wrong, Some(twice_minus));
        assert!(a.iter().zip(&xs).all(|(&o, &x)| o == 2.0 * x - 3.0));
        // bfloat16, in place on `a`: widened, computed in f32, rounded once.
        let mut data: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
        let mut other: Vec<bf16> = ys.iter().map(|&y| bf16::from_f32(y)).collect();
        let expected: Vec<bf16> =
            data.iter().zip(&other).map(|(x, y)| bf16::from_f32(2.0 * x.to_f32() - y.to_f32())).collect();
        let ptr = data.as_mut_ptr();
        let it = Iter::new(
            &[Operand { data: ptr.cast(), ..Operand::over(&mut data, &s, &[1], DType::BF16) }],
            &[
                Operand { data: ptr.cast(), ..Operand::over(&mut Vec::<bf16>::new(), &s, &[1], DType::BF16) },
                Operand::over(&mut other, &s, &[1], DType::BF16),
            ],
            &s,
        );
        binary_widened::<bf16>(&it, wrong, Some(twice_minus), true);
        assert_eq!(data, expected);
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
        // Rows read backwards (flip's negative inner stride), into int32 and as float32 copies.
        let mut rows: Vec<f32> = (0..2 * 37).map(|k| k as f32 - 3.5).collect();
        let want: Vec<f32> = rows.chunks(37).flat_map(|r| r.iter().rev().copied()).collect();
        let (mut same, mut ints) = (vec![0f32; 74], vec![0i32; 74]);
        let last = rows.as_mut_ptr().wrapping_add(36);
        let flipped = Operand { data: last.cast(), ..Operand::over(&mut rows, &[2, 37], &[37, -1], DType::F32) };
        // SAFETY: every element read lies in `rows` (row r at 37 r + 36 - k), which outlives the calls.
        unsafe {
            copy_cast(&flipped, &Operand::over(&mut same, &[2, 37], &[37, 1], DType::F32));
            copy_cast(&flipped, &Operand::over(&mut ints, &[2, 37], &[37, 1], DType::I32));
        }
        assert_eq!(same, want);
        assert_eq!(ints, want.iter().map(|&x| x as i32).collect::<Vec<_>>());
        assert!(broadcast_shapes(&[&[2, 1, 4], &[3, 1]]).unwrap() == [2, 3, 4]);
        assert!(broadcast_shapes(&[&[2], &[3]]).is_err());
    }

    #[test]
    fn float16_copies_convert_as_cast_in_every_layout() {
        use half::{bf16, f16};
        // Every float16 value (NaNs aside: their payloads are the hardware's), 3968 blocks, to int32, bfloat16 and float64 and back from float32: contiguous, strided
        // (every other element) and a tail (37 elements, not a whole block); in all three tiers
        // when the suite runs with REGEN_CPU_CAPABILITY.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).filter(|h| !h.is_nan()).collect();
        fn check<S: Element, D: Element>(src: &[S]) {
            for (n, step) in [(src.len(), 1usize), (src.len() / 2, 2), (37, 1)] {
                let mut from: Vec<S> = src.to_vec();
                let mut to = vec![D::zero(); n * step];
                // SAFETY: both live for the call; the strided view reads every `step`th element.
                unsafe {
                    copy_cast(
                        &Operand::over(&mut from, &[n as i64], &[step as i64], S::DTYPE),
                        &Operand::over(&mut to, &[n as i64], &[step as i64], D::DTYPE),
                    )
                };
                for k in 0..n {
                    assert_eq!(to[k * step], cast::<S, D>(src[k * step]), "{:?} at {k} of {n}", src[k * step]);
                }
            }
        }
        check::<f16, i32>(&all);
        check::<f16, bf16>(&all);
        check::<f16, f64>(&all);
        let wide: Vec<f32> = all.iter().map(|h| h.to_f32() * 1.0009).collect();
        check::<f32, f16>(&wide);
        check::<i64, f16>(&(-40000i64..40000).step_by(7).collect::<Vec<_>>());
    }
}
