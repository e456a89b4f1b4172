//! Pointwise ops with several inputs or with parameters, as table rows: ternary ops (lerp,
//! addcmul, addcdiv, clamp), activations and their backward ops, and one-tensor predicates.
//! `pointwise_ops!` defines each op once — its parameters, the promotion rule, and its scalar
//! function per dtype domain (`b` bool, `i` integers through i64, `f` reals generic over
//! [`Real`], `c` complex) over the inputs `[x, y, ...]` — and the `PointwiseKernels` impl holds
//! the generated trait's methods, one line each. `where`, `masked_fill_`, the shifts and the ops
//! with two outputs or special checks are small functions below.

use half::{bf16, f16};
use num_complex::{Complex, Complex32, Complex64};
use regen_runtime::{Error, Result, Scalar, Tensor, TensorRef};

use crate::dispatch_all;
use crate::engine::dispatch::{Domains, Float, Int, dispatch};
use crate::engine::dtype::{DType, Num, not_implemented};
use crate::engine::iter::{Iter, scalar_as};
use crate::engine::loops;
use crate::engine::operands::{Config, Input, elementwise, elementwise_new, new_output, result_dtype};
use crate::engine::scalar::{self as s, Real};
use crate::ops::unary;

/// A scalar parameter of an op (clamp's bounds, addcmul's value), read in every element: its
/// value in each domain is computed once, so the loop reads a field instead of matching on a
/// [`Num`] per element (which kept hardtanh's loop from vectorising: 5x CPU's time).
#[derive(Clone, Copy, Debug)]
pub struct Param {
    b: bool,
    i: i64,
    f: f64,
    c: (f64, f64),
}

impl Param {
    pub fn from_scalar(s: Scalar) -> Param {
        let n = Num::from_scalar(s);
        Param { b: n.as_bool(), i: n.as_i64(), f: n.as_f64(), c: n.as_complex() }
    }
    #[inline(always)]
    pub fn as_bool(self) -> bool {
        self.b
    }
    #[inline(always)]
    pub fn as_i64(self) -> i64 {
        self.i
    }
    #[inline(always)]
    pub fn as_f64(self) -> f64 {
        self.f
    }
    #[inline(always)]
    pub fn as_complex(self) -> (f64, f64) {
        self.c
    }
}

/// An op of `N` inputs whose result has the computation dtype.
pub trait Pointwise<const N: usize>: Sync + Copy {
    const NAME: &'static str;
    const CONFIG: Config;
    const BOOL: bool;
    const INT: bool;
    const FLOAT: bool;
    const COMPLEX: bool;
    fn b(&self, _: [bool; N]) -> bool {
        unreachable!("checked by BOOL")
    }
    fn i(&self, _: [i64; N]) -> i64 {
        unreachable!("checked by INT")
    }
    fn f<T: Real>(&self, _: [T; N]) -> T {
        unreachable!("checked by FLOAT")
    }
    fn c<T: Real>(&self, _: [Complex<T>; N]) -> Complex<T> {
        unreachable!("checked by COMPLEX")
    }
}

/// A predicate of `N` inputs: the result is Bool.
pub trait Test<const N: usize>: Sync + Copy {
    const NAME: &'static str;
    const BOOL: bool;
    const INT: bool;
    const FLOAT: bool;
    const COMPLEX: bool;
    fn b(&self, _: [bool; N]) -> bool {
        unreachable!("checked by BOOL")
    }
    fn i(&self, _: [i64; N]) -> bool {
        unreachable!("checked by INT")
    }
    fn f<T: Real>(&self, _: [T; N]) -> bool {
        unreachable!("checked by FLOAT")
    }
    fn c<T: Real>(&self, _: [Complex<T>; N]) -> bool {
        unreachable!("checked by COMPLEX")
    }
}

/// Runs `op` as `out = op(inputs)`.
pub fn run<Op: Pointwise<N>, const N: usize>(op: &Op, inputs: [Input<'_>; N], out: TensorRef<'_>) -> Result<()> {
    elementwise(Op::NAME, Op::CONFIG, &out, &inputs, |p| dispatch(&Loop::<Op, N> { op, it: &p.iter }, p.common))
}

/// A new tensor holding `op(inputs)`, for functional forms PyTorch does not derive from `.out`.
pub fn functional<Op: Pointwise<N>, const N: usize>(op: &Op, inputs: [Input<'_>; N]) -> Result<Tensor> {
    elementwise_new(Op::NAME, Op::CONFIG, &inputs, |p| dispatch(&Loop::<Op, N> { op, it: &p.iter }, p.common))
}

/// `op`'s loop over an iterator, in each dtype domain it has.
struct Loop<'a, Op, const N: usize> {
    op: &'a Op,
    it: &'a Iter,
}

impl<Op: Pointwise<N>, const N: usize> Domains for Loop<'_, Op, N> {
    const NAME: &'static str = Op::NAME;
    const BOOL: bool = Op::BOOL;
    const INT: bool = Op::INT;
    const FLOAT: bool = Op::FLOAT;
    const COMPLEX: bool = Op::COMPLEX;
    fn bool(&self) {
        let op = *self.op;
        loops::nary::<bool, bool, N>(
            self.it,
            #[inline(always)]
            move |x| op.b(x),
        )
    }
    fn int<T: Int>(&self) {
        let op = *self.op;
        loops::nary::<T, T, N>(
            self.it,
            #[inline(always)]
            move |x| T::from_i64(op.i(x.map(T::to_i64))),
        )
    }
    fn float<T: Float>(&self) {
        let op = *self.op;
        T::nary::<N>(
            self.it,
            #[inline(always)]
            move |x| op.f(x),
            const { crate::engine::dispatch::lanes(Op::NAME) },
        )
    }
    fn complex<R: Real>(&self) {
        let op = *self.op;
        loops::nary::<Complex<R>, Complex<R>, N>(
            self.it,
            #[inline(always)]
            move |x| op.c(x),
        )
    }
}

/// Runs the predicate `op` as `out = op(inputs)` (Bool, cast to `out`'s dtype).
pub fn run_test<Op: Test<N>, const N: usize>(op: &Op, inputs: [Input<'_>; N], out: TensorRef<'_>) -> Result<()> {
    elementwise(Op::NAME, Config::PREDICATE, &out, &inputs, |p| {
        dispatch(&TestLoop::<Op, N> { op, it: &p.iter }, p.common)
    })
}

/// The predicate `op`'s loop over an iterator, in each dtype domain it has.
struct TestLoop<'a, Op, const N: usize> {
    op: &'a Op,
    it: &'a Iter,
}

impl<Op: Test<N>, const N: usize> Domains for TestLoop<'_, Op, N> {
    const NAME: &'static str = Op::NAME;
    const BOOL: bool = Op::BOOL;
    const INT: bool = Op::INT;
    const FLOAT: bool = Op::FLOAT;
    const COMPLEX: bool = Op::COMPLEX;
    fn bool(&self) {
        let op = *self.op;
        loops::nary::<bool, bool, N>(
            self.it,
            #[inline(always)]
            move |x| op.b(x),
        )
    }
    fn int<T: Int>(&self) {
        let op = *self.op;
        loops::nary::<T, bool, N>(
            self.it,
            #[inline(always)]
            move |x| op.i(x.map(T::to_i64)),
        )
    }
    fn float<T: Float>(&self) {
        let op = *self.op;
        loops::nary::<T, bool, N>(
            self.it,
            #[inline(always)]
            move |x| op.f(x.map(T::to_acc)),
        )
    }
    fn complex<R: Real>(&self) {
        let op = *self.op;
        loops::nary::<Complex<R>, bool, N>(
            self.it,
            #[inline(always)]
            move |x| op.c(x),
        )
    }
}

/// `op(inputs)` written into the first input, for in-place forms PyTorch does not derive: the
/// broadcast shape must be the tensor's own.
pub fn in_place<Op: Pointwise<N>, const N: usize>(op: &Op, inputs: [Input<'_>; N]) -> Result<()> {
    let Input::Tensor(self_) = inputs[0] else { unreachable!("in-place forms start with self") };
    check_in_place(&self_, &inputs)?;
    run(op, inputs, self_)
}

fn check_in_place(self_: &TensorRef<'_>, inputs: &[Input<'_>]) -> Result<()> {
    let shapes: Vec<&[i64]> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Tensor(t) | Input::Mask(t) => Some(t.sizes()),
            Input::Scalar(_) => None,
        })
        .collect();
    let shape = crate::engine::iter::broadcast_shapes(&shapes)?;
    if shape != self_.sizes() {
        return Err(Error::runtime(format!(
            "output with shape {:?} doesn't match the broadcast shape {shape:?}",
            self_.sizes()
        )));
    }
    Ok(())
}

/// Defines op structs: `op Struct "name" CONFIG [inputs] (params) { domain: expr; ... }` (the
/// parameters are in scope in each expression), and `test Struct "name" PREDICATE [inputs] (params) {...}`
/// for predicates.
macro_rules! pointwise_ops {
    ($(
        $kind:ident $op:ident $name:literal $config:ident $args:tt ($($p:ident: $pt:ty),*) {
            $(b: $b:expr;)? $(i: $i:expr;)? $(f: $f:expr;)? $(c: $c:expr;)?
        }
    )*) => {$(
        #[derive(Clone, Copy)]
        pub struct $op { $(pub $p: $pt),* }
        pointwise_ops!(@impl $kind $op $name $config $args {$($p),*} $(b: $b;)? $(i: $i;)? $(f: $f;)? $(c: $c;)?);
    )*};
    (@impl op $op:ident $name:literal $config:ident $args:tt $fields:tt
        $(b: $b:expr;)? $(i: $i:expr;)? $(f: $f:expr;)? $(c: $c:expr;)?) => {
        impl Pointwise<{ arity!($args) }> for $op {
            const NAME: &'static str = $name;
            const CONFIG: Config = Config::$config;
            const BOOL: bool = false $(|| { let _ = stringify!($b); true })?;
            const INT: bool = false $(|| { let _ = stringify!($i); true })?;
            const FLOAT: bool = false $(|| { let _ = stringify!($f); true })?;
            const COMPLEX: bool = false $(|| { let _ = stringify!($c); true })?;
            // Inlined into each dtype's loop (engine::dispatch), as the unary and binary tables' are.
            $(#[allow(unused_variables)] #[inline(always)] fn b(&self, $args: [bool; arity!($args)]) -> bool { let $op $fields = *self; $b })?
            $(#[allow(unused_variables)] #[inline(always)] fn i(&self, $args: [i64; arity!($args)]) -> i64 { let $op $fields = *self; $i })?
            $(#[allow(unused_variables)] #[inline(always)] fn f<T: Real>(&self, $args: [T; arity!($args)]) -> T { let $op $fields = *self; $f })?
            $(#[allow(unused_variables)] #[inline(always)] fn c<T: Real>(&self, $args: [Complex<T>; arity!($args)]) -> Complex<T> { let $op $fields = *self; $c })?
        }
    };
    (@impl test $op:ident $name:literal PREDICATE $args:tt $fields:tt
        $(b: $b:expr;)? $(i: $i:expr;)? $(f: $f:expr;)? $(c: $c:expr;)?) => {
        impl Test<{ arity!($args) }> for $op {
            const NAME: &'static str = $name;
            const BOOL: bool = false $(|| { let _ = stringify!($b); true })?;
            const INT: bool = false $(|| { let _ = stringify!($i); true })?;
            const FLOAT: bool = false $(|| { let _ = stringify!($f); true })?;
            const COMPLEX: bool = false $(|| { let _ = stringify!($c); true })?;
            $(#[allow(unused_variables)] #[inline(always)] fn b(&self, $args: [bool; arity!($args)]) -> bool { let $op $fields = *self; $b })?
            $(#[allow(unused_variables)] #[inline(always)] fn i(&self, $args: [i64; arity!($args)]) -> bool { let $op $fields = *self; $i })?
            $(#[allow(unused_variables)] #[inline(always)] fn f<T: Real>(&self, $args: [T; arity!($args)]) -> bool { let $op $fields = *self; $f })?
            $(#[allow(unused_variables)] #[inline(always)] fn c<T: Real>(&self, $args: [Complex<T>; arity!($args)]) -> bool { let $op $fields = *self; $c })?
        }
    };
}

/// The number of inputs in `[x, y, ...]`.
macro_rules! arity {
    ([$($x:ident),+]) => {
        [$(stringify!($x)),+].len()
    };
}

pub mod ops {
    //! The op structs of `pointwise_ops!`.
    use num_complex::Complex;
    use num_traits::{One, Zero};

    use super::{Pointwise, Test};
    use crate::engine::operands::Config;
    use crate::engine::scalar::{self as s, Real};

    fn t<T: Real>(x: f64) -> T {
        T::from_f64(x)
    }

    pointwise_ops! {
        // Ternary ops.
        op Lerp "lerp" ARITHMETIC [x, end, w] () {
            f: s::lerp(x, end, w);
            c: s::lerp_complex(x, end, w);
        }
        op LerpScalar "lerp" ARITHMETIC [x, end] (weight: super::Param) {
            f: s::lerp(x, end, t(weight.as_f64()));
            c: s::lerp_complex(x, end, Complex::new(t(weight.as_complex().0), t(weight.as_complex().1)));
        }
        op Addcmul "addcmul" ARITHMETIC [x, a, b] (value: super::Param) {
            i: x.wrapping_add(value.as_i64().wrapping_mul(a).wrapping_mul(b));
            f: x + t::<T>(value.as_f64()) * a * b;
            c: x + Complex::<T>::new(t(value.as_complex().0), t(value.as_complex().1)) * a * b;
        }
        op Addcdiv "addcdiv" ARITHMETIC [x, a, b] (value: super::Param) {
            f: x + t::<T>(value.as_f64()) * a / b;
            c: x + Complex::<T>::new(t(value.as_complex().0), t(value.as_complex().1)) * a / b;
        }
        // clamp: NaN anywhere gives NaN; a lower bound above the upper gives the upper.
        op Clamp "clamp" ARITHMETIC [x, lo, hi] () {
            i: x.max(lo).min(hi);
            f: if lo.is_nan() | hi.is_nan() { T::nan() } else { s::clamp(x, lo, hi) };
        }
        op ClampMin "clamp_min" ARITHMETIC [x, lo] () {
            b: x || lo;
            i: x.max(lo);
            f: s::maximum(x, lo);
        }
        op ClampMax "clamp_max" ARITHMETIC [x, hi] () {
            b: x && hi;
            i: x.min(hi);
            f: s::minimum(x, hi);
        }
        // Activations and their backward ops (ATen's cpu/Activation.cpp).
        op Threshold "threshold" ARITHMETIC [x] (threshold: super::Param, value: super::Param) {
            i: if x <= threshold.as_i64() { value.as_i64() } else { x };
            f: if x <= t(threshold.as_f64()) { t(value.as_f64()) } else { x };
        }
        op ThresholdBackward "threshold_backward" ARITHMETIC [g, x] (threshold: super::Param) {
            i: if x <= threshold.as_i64() { 0 } else { g };
            f: if x <= t(threshold.as_f64()) { T::zero() } else { g };
        }
        // gelu and silu are rows of the unary engine (`vector_rows`), with vector functions.
        op GeluBackward "gelu_backward" ARITHMETIC [g, x] (tanh: bool) {
            f: if tanh { s::gelu_tanh_backward(g, x) } else { s::gelu_backward(g, x) };
        }
        // `1 + x·(1 - sigmoid)` is one fused multiply-add in CPU's vectorised kernel (GCC contracts
        // it); float16/bfloat16 compute in f32 and round once, as its reduced-float path does.
        op SiluBackward "silu_backward" ARITHMETIC [g, x] () {
            f: { let sg = T::one() / (T::one() + (-x).vexp()); g * sg * x.mul_add(T::one() - sg, T::one()) };
            c: { let sg = (Complex::<T>::one() + (-x).exp()).inv(); g * sg * (Complex::<T>::one() + x * (Complex::<T>::one() - sg)) };
        }
        op Mish "mish" ARITHMETIC [x] () {
            f: x * x.vexp().vln_1p().vtanh();
        }
        op Elu "elu" ARITHMETIC [x] (alpha: f64, scale: f64, input_scale: f64) {
            f: if x <= T::zero() { (x * t(input_scale)).vexp_m1() * (t::<T>(alpha) * t(scale)) } else { x * t(scale) };
        }
        op EluBackward "elu_backward" ARITHMETIC [g, y] (alpha: f64, scale: f64, input_scale: f64, is_result: bool) {
            f: {
                let (neg, pos, ipt) = (t::<T>(alpha) * t(scale), t::<T>(scale), t::<T>(input_scale));
                if y > T::zero() { g * pos } else if is_result { g * ipt * (y + neg) } else { g * ipt * neg * (y * ipt).vexp() }
            };
        }
        op LeakyRelu "leaky_relu" ARITHMETIC [x] (slope: f64) {
            f: if x > T::zero() { x } else { x * t(slope) };
        }
        op LeakyReluBackward "leaky_relu_backward" ARITHMETIC [g, x] (slope: f64) {
            f: if x > T::zero() { g } else { g * t(slope) };
        }
        op Hardtanh "hardtanh" ARITHMETIC [x] (lo: super::Param, hi: super::Param) {
            i: x.max(lo.as_i64()).min(hi.as_i64());
            f: s::clamp(x, t(lo.as_f64()), t(hi.as_f64()));
        }
        op HardtanhBackward "hardtanh_backward" ARITHMETIC [g, x] (lo: f64, hi: f64) {
            f: if (x <= t(lo)) | (x >= t(hi)) { T::zero() } else { g };
        }
        op Hardsigmoid "hardsigmoid" ARITHMETIC [x] () {
            f: (x + t(3.0)).max(T::zero()).min(t(6.0)) / t(6.0);
        }
        op HardsigmoidBackward "hardsigmoid_backward" ARITHMETIC [g, x] () {
            f: if (x > t(-3.0)) & (x < t(3.0)) { g / t(6.0) } else { T::zero() };
        }
        op Hardswish "hardswish" ARITHMETIC [x] () {
            f: x * (x + t(3.0)).max(T::zero()).min(t(6.0)) / t(6.0);
        }
        op HardswishBackward "hardswish_backward" ARITHMETIC [g, x] () {
            f: if x < t(-3.0) { T::zero() } else if x <= t(3.0) { g * (x / t(3.0) + t(0.5)) } else { g };
        }
        op Softplus "softplus" ARITHMETIC [x] (beta: f64, threshold: f64) {
            f: if x * t(beta) > t(threshold) { x } else { (x * t(beta)).vexp().vln_1p() / t(beta) };
        }
        op SoftplusBackward "softplus_backward" ARITHMETIC [g, x] (beta: f64, threshold: f64) {
            f: { let z = (x * t(beta)).vexp(); if x * t(beta) > t(threshold) { g } else { g * z / (z + T::one()) } };
        }
        op Softshrink "softshrink" ARITHMETIC [x] (lambd: f64) {
            f: {
                let (l, inner) = (t::<T>(lambd), x * T::zero());
                let y = if x < -l { x + l } else { inner };
                if x > l { x - l } else { y }
            };
        }
        op Shrinkage "shrink_backward" ARITHMETIC [g, x] (lambd: f64) {
            f: if (x >= -t::<T>(lambd)) & (x <= t(lambd)) { T::zero() } else { g };
        }
        op Hardshrink "hardshrink" ARITHMETIC [x] (lambd: f64) {
            f: if (x >= -t::<T>(lambd)) & (x <= t(lambd)) { T::zero() } else { x };
        }
        op SigmoidBackward "sigmoid_backward" ARITHMETIC [g, y] () {
            f: g * (T::one() - y) * y;
            c: g * ((Complex::<T>::one() - y) * y).conj();
        }
        op TanhBackward "tanh_backward" ARITHMETIC [g, y] () {
            f: g * (T::one() - y * y);
            c: g * (Complex::<T>::one() - y * y).conj();
        }
        op Prelu "_prelu_kernel" ARITHMETIC [x, w] () {
            f: if x > T::zero() { x } else { w * x };
        }
        op PreluGradInput "_prelu_kernel_backward" ARITHMETIC [x, w, g] () {
            f: if x > T::zero() { g } else { w * g };
        }
        op PreluGradWeight "_prelu_kernel_backward" ARITHMETIC [x, w, g] () {
            f: if x > T::zero() { T::zero() } else { x * g };
        }
        // frexp's mantissa (exact in any float type: f64's frexp serves all).
        op FrexpMantissa "frexp" ARITHMETIC [x] () {
            f: T::from_f64(crate::engine::scalar::frexp(x.to_f64()).0);
        }
        // log_sigmoid_forward's two outputs, as ATen's CPU kernel computes them.
        op LogSigmoid "log_sigmoid_forward" ARITHMETIC [x] () {
            f: x.min(T::zero()) - (-x.abs()).vexp().vln_1p();
        }
        op LogSigmoidBuffer "log_sigmoid_forward" ARITHMETIC [x] () {
            f: (-x.abs()).vexp();
        }
        op LogSigmoidBackward "log_sigmoid_backward" ARITHMETIC [x, buffer, g] () {
            f: {
                let (max_deriv, sign) = if x < T::zero() { (T::one(), T::one()) } else { (T::zero(), -T::one()) };
                (max_deriv - sign * (buffer / (T::one() + buffer))) * g
            };
        }
        op NanToNum "nan_to_num" ARITHMETIC [x] (nan: f64, posinf: f64, neginf: f64) {
            b: x;
            i: x;
            f: s::nan_to_num(x, t(nan), t(posinf), t(neginf));
            c: Complex::new(s::nan_to_num(x.re, t(nan), t(posinf), t(neginf)), s::nan_to_num(x.im, t(nan), t(posinf), t(neginf)));
        }
        op RoundDecimals "round" ARITHMETIC [x] (decimals: i64) {
            f: s::round_decimals(x, decimals);
        }
        op Polygamma "polygamma" FLOATING [x] (n: i64) {
            f: crate::math::special::polygamma(n, x);
        }
        op Mvlgamma "mvlgamma" FLOATING [x] (p: i64) {
            f: crate::math::special::mvlgamma(x, p);
        }
        // The bounds come rounded to the tensor's dtype, as ATen converts eps (see `logit`).
        op Logit "logit" FLOATING [x] (bounds: Option<(f64, f64)>) {
            f: {
                // ATen's `x < lo ? lo : (x > hi ? hi : x)`, as selects.
                let x = match bounds {
                    Some((lo, hi)) => {
                        let clamped = if x > t(hi) { t(hi) } else { x };
                        if x < t(lo) { t(lo) } else { clamped }
                    }
                    None => x,
                };
                crate::math::special::logit(x, None)
            };
        }
        // Losses' elementwise terms and gradients (kernels/ops/loss.rs reduces them), as ATen's
        // `PointwiseOpsKernel.cpp` and `BinaryOpsKernel.cpp` write them; `norm` is 1/numel (2/numel
        // for mse) under reduction=mean, else 1 (2).
        op MseLoss "mse_loss" ARITHMETIC [x, y] () {
            f: (x - y) * (x - y);
        }
        op MseLossBackward "mse_backward" ARITHMETIC [x, y, g] (norm: f64) {
            f: t::<T>(norm) * (x - y) * g;
        }
        op SmoothL1Loss "smooth_l1_loss" ARITHMETIC [x, y] (beta: f64) {
            f: {
                let z = (x - y).abs();
                if z < t(beta) { t::<T>(0.5) * z * z / t(beta) } else { z - t::<T>(0.5) * t(beta) }
            };
        }
        op SmoothL1LossBackward "smooth_l1_backward" ARITHMETIC [x, y, g] (norm: f64, beta: f64) {
            f: {
                let d = x - y;
                if d <= -t::<T>(beta) { -t::<T>(norm) * g } else if d >= t(beta) { t::<T>(norm) * g } else { t::<T>(norm) * d * g / t(beta) }
            };
        }
        op HuberLoss "huber_loss" ARITHMETIC [x, y] (delta: f64) {
            f: {
                let z = (x - y).abs();
                if z < t(delta) { t::<T>(0.5) * z * z } else { t::<T>(delta) * (z - t::<T>(0.5) * t(delta)) }
            };
        }
        op HuberLossBackward "huber_backward" ARITHMETIC [x, y, g] (norm: f64, delta: f64) {
            f: {
                let d = x - y;
                if d <= -t::<T>(delta) {
                    -t::<T>(norm) * g * t(delta)
                } else if d >= t(delta) {
                    t::<T>(norm) * g * t(delta)
                } else {
                    t::<T>(norm) * d * g
                }
            };
        }
        // std::max keeps a NaN first argument; the logarithms are clamped at -100.
        op BinaryCrossEntropy "binary_cross_entropy" ARITHMETIC [x, y] () {
            f: {
                let lo = t::<T>(-100.0);
                let a = (-x).ln_1p();
                let b = x.ln();
                (y - T::one()) * (if a < lo { lo } else { a }) - y * (if b < lo { lo } else { b })
            };
        }
        op BinaryCrossEntropyBackward "binary_cross_entropy_backward" ARITHMETIC [g, x, y] () {
            f: {
                let d = (T::one() - x) * x;
                let eps = t::<T>(1e-12);
                g * (x - y) / (if d < eps { eps } else { d })
            };
        }
        op LogitBackward "logit_backward" ARITHMETIC [g, x] (eps: Option<f64>) {
            f: match eps {
                Some(eps) if eps >= 0.0 => {
                    if x < t(eps) || x > T::one() - t(eps) { T::zero() } else { g / (x * (T::one() - x)) }
                }
                _ if x < T::zero() || x > T::one() => T::nan(),
                _ if x == T::zero() || x == T::one() => g * T::infinity(),
                _ => g / (x * (T::one() - x)),
            };
        }
        // Predicates of one tensor.
        test Isnan "isnan" PREDICATE [x] () {
            b: false;
            i: false;
            f: x.is_nan();
            c: x.re.is_nan() || x.im.is_nan();
        }
        test Isposinf "isposinf" PREDICATE [x] () {
            b: false;
            i: false;
            f: x.is_infinite() && x > T::zero();
        }
        test Isneginf "isneginf" PREDICATE [x] () {
            b: false;
            i: false;
            f: x.is_infinite() && x < T::zero();
        }
        test Signbit "signbit" PREDICATE [x] () {
            b: false;
            i: x < 0;
            f: x.is_sign_negative();
        }
        test LogicalNot "logical_not" PREDICATE [x] () {
            b: !x;
            i: x == 0;
            f: x == T::zero();
            c: x.is_zero();
        }
    }
}

/// `torch.where(condition, self, other)`.
pub fn where_(condition: TensorRef<'_>, a: TensorRef<'_>, b: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    let inputs = [Input::Mask(condition), Input::Tensor(a), Input::Tensor(b)];
    elementwise("where", Config::ARITHMETIC, &out, &inputs, |p| {
        dispatch_all!(p.common, |T| loops::ternary::<bool, T, T, T>(
            &p.iter,
            #[inline(always)]
            |c, x, y| if c { x } else { y }
        ));
        Ok(())
    })
}

/// The functional `torch.where`.
pub fn where_functional(condition: TensorRef<'_>, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<Tensor> {
    let dtype = result_dtype(Config::ARITHMETIC, &[Input::Tensor(a), Input::Tensor(b)])?;
    let out = new_output(dtype, &[Input::Tensor(a), Input::Tensor(b), Input::Mask(condition)])?;
    where_(condition, a, b, out.as_ref())?;
    Ok(out)
}

/// `self.masked_fill_(mask, value)`.
pub fn masked_fill(self_: TensorRef<'_>, mask: TensorRef<'_>, value: Scalar) -> Result<()> {
    if DType::from_scalar_type(mask.dtype())? != DType::Bool {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            DType::from_scalar_type(mask.dtype())?.name()
        )));
    }
    let inputs = [Input::Mask(mask), Input::Tensor(self_)];
    check_in_place(&self_, &inputs)?;
    let config = Config { promote_inputs: false, ..Config::ARITHMETIC };
    elementwise("masked_fill_", config, &self_, &inputs, |p| {
        dispatch_all!(p.common, |T| {
            let v = scalar_as::<T>(value);
            loops::binary::<bool, T, T>(
                &p.iter,
                #[inline(always)]
                move |m, x| if m { v } else { x },
            )
        });
        Ok(())
    })
}

/// The value of a 0-dimensional tensor argument as a Scalar (`masked_fill_.Tensor`,
/// `fill_.Tensor`).
pub fn item(t: &TensorRef<'_>, op: &str) -> Result<Scalar> {
    if t.dim() != 0 {
        return Err(Error::runtime(format!(
            "{op} only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            t.dim()
        )));
    }
    regen_runtime::bootstrap::_local_scalar_dense(*t)
}

/// `torch.clamp(self, min, max)` with Scalar or tensor bounds (either may be absent).
pub fn clamp(self_: TensorRef<'_>, lo: Option<Input<'_>>, hi: Option<Input<'_>>, out: TensorRef<'_>) -> Result<()> {
    if DType::from_scalar_type(self_.dtype())?.is_complex() {
        return Err(Error::runtime("clamp is not supported for complex types"));
    }
    let (lo, hi) = integer_bounds(DType::from_scalar_type(self_.dtype())?, lo, hi)?;
    let x = Input::Tensor(self_);
    match (lo, hi) {
        (Some(lo), Some(hi)) => run(&ops::Clamp {}, [x, lo, hi], out),
        (Some(lo), None) => run(&ops::ClampMin {}, [x, lo], out),
        (None, Some(hi)) => run(&ops::ClampMax {}, [x, hi], out),
        (None, None) => Err(Error::runtime("torch.clamp: At least one of 'min' or 'max' must not be None")),
    }
}

/// Integer Scalar bounds of an integer tensor, as ATen treats them: a bound outside the
/// dtype's range on the side that cannot bind is dropped (`clamp(uint8, min=-1)`), one on the
/// other side is an error.
fn integer_bounds<'a>(
    dtype: DType,
    lo: Option<Input<'a>>,
    hi: Option<Input<'a>>,
) -> Result<(Option<Input<'a>>, Option<Input<'a>>)> {
    let (min, max) = match dtype {
        DType::U8 => (0, i64::from(u8::MAX)),
        DType::I8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
        DType::I16 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => return Ok((lo, hi)),
    };
    // The lower bound binds a value at or above the range's minimum; the upper one at or below
    // its maximum. Out of range on the other side, it binds nothing and is the range's end.
    let check = |bound: Option<Input<'a>>, side: Side| -> Result<Option<Input<'a>>> {
        let Some(Input::Scalar(Scalar::Int(v))) = bound else { return Ok(bound) };
        let (binds, end) = match side {
            Side::Min => (v >= min, min),
            Side::Max => (v <= max, max),
        };
        if (min..=max).contains(&v) {
            Ok(bound)
        } else if binds {
            Err(Error::runtime(format!(
                "Clamp {} value {v} is outside the representable range of {}",
                side.name(),
                dtype.name()
            )))
        } else {
            Ok(Some(Input::Scalar(Scalar::Int(end))))
        }
    };
    Ok((check(lo, Side::Min)?, check(hi, Side::Max)?))
}

/// Which bound of a clamp.
#[derive(Clone, Copy)]
enum Side {
    Min,
    Max,
}

impl Side {
    /// As ATen's messages name it.
    fn name(self) -> &'static str {
        match self {
            Side::Min => "min",
            Side::Max => "max",
        }
    }
}

/// `torch.lerp`: `self` and `end` (and a tensor weight) must share a dtype, as ATen checks.
pub fn lerp(self_: TensorRef<'_>, end: TensorRef<'_>, weight: Input<'_>, out: TensorRef<'_>) -> Result<()> {
    let dtype = DType::from_scalar_type(self_.dtype())?;
    let others = [Some(end), if let Input::Tensor(w) = weight { Some(w) } else { None }];
    for (name, t) in ["end", "weight"].iter().zip(others) {
        if let Some(t) = t {
            let d = DType::from_scalar_type(t.dtype())?;
            if d != dtype {
                return Err(Error::runtime(format!(
                    "expected dtype {} for `{name}` but got dtype {}",
                    dtype.name().to_lowercase(),
                    d.name().to_lowercase()
                )));
            }
        }
    }
    match weight {
        Input::Scalar(w) => {
            run(&ops::LerpScalar { weight: Param::from_scalar(w) }, [Input::Tensor(self_), Input::Tensor(end)], out)
        }
        w => run(&ops::Lerp {}, [Input::Tensor(self_), Input::Tensor(end), w], out),
    }
}

/// `torch.addcdiv`: integer division is refused, as ATen does.
pub fn addcdiv(
    self_: TensorRef<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    value: Scalar,
    out: TensorRef<'_>,
) -> Result<()> {
    let integral =
        |t: &TensorRef<'_>| DType::from_scalar_type(t.dtype()).is_ok_and(|d| !d.is_floating() && !d.is_complex());
    if integral(&a) && integral(&b) {
        return Err(Error::runtime(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.",
        ));
    }
    let inputs = [Input::Tensor(self_), Input::Tensor(a), Input::Tensor(b)];
    run(&ops::Addcdiv { value: Param::from_scalar(value) }, inputs, out)
}

/// `torch.complex(real, imag)`: two real tensors of one floating dtype.
pub fn complex(re: TensorRef<'_>, im: TensorRef<'_>, out: TensorRef<'_>, polar: bool) -> Result<()> {
    let (dr, di) = (DType::from_scalar_type(re.dtype())?, DType::from_scalar_type(im.dtype())?);
    if dr != di || !matches!(dr, DType::F32 | DType::F64) {
        return Err(Error::runtime(format!(
            "Expected both inputs to be Float or Double tensors but got {} and {}",
            dr.name(),
            di.name()
        )));
    }
    let config = Config { output_dtype: Some(dr.to_complex()), safe_cast_to_output: true, ..Config::ARITHMETIC };
    elementwise(if polar { "polar" } else { "complex" }, config, &out, &[Input::Tensor(re), Input::Tensor(im)], |p| {
        match (p.common, polar) {
            (DType::F32, false) => loops::binary::<f32, f32, Complex32>(&p.iter, Complex::new),
            (DType::F64, false) => loops::binary::<f64, f64, Complex64>(&p.iter, Complex::new),
            (DType::F32, true) => loops::binary::<f32, f32, Complex32>(&p.iter, Complex::from_polar),
            (DType::F64, true) => loops::binary::<f64, f64, Complex64>(&p.iter, Complex::from_polar),
            (other, _) => return Err(not_implemented("complex", other)),
        }
        Ok(())
    })
}

/// `torch.mvlgamma(x, p)` (PyTorch no longer checks that every element exceeds (p - 1) / 2: those
/// give infinity or NaN).
pub fn mvlgamma(x: TensorRef<'_>, p: i64, out: TensorRef<'_>) -> Result<()> {
    if p < 1 {
        return Err(Error::runtime("p has to be greater than or equal to 1"));
    }
    run(&ops::Mvlgamma { p }, [Input::Tensor(x)], out)
}

/// The `logit` op for `x`'s dtype: `eps` and `1 - eps` rounded to the dtype as ATen computes them
/// (in bfloat16, `1 - 1e-3` is 0.9990234375), and no clamping for a negative or NaN eps.
pub fn logit(x: &TensorRef<'_>, eps: Option<f64>) -> Result<ops::Logit> {
    let round: fn(f64) -> f64 = match DType::from_scalar_type(x.dtype())? {
        DType::F16 => |v| f64::from(f16::from_f64(v)),
        DType::BF16 => |v| f64::from(bf16::from_f64(v)),
        DType::F32 => |v| f64::from(v as f32),
        _ => |v| v,
    };
    let bounds = eps.filter(|e| *e >= 0.0).map(|e| {
        let lo = round(e);
        (lo, round(1.0 - lo))
    });
    Ok(ops::Logit { bounds })
}

/// `torch.frexp`: mantissa in `self`'s floating dtype, exponent in int32, as C's frexp.
pub fn frexp(x: TensorRef<'_>, mantissa: TensorRef<'_>, exponent: TensorRef<'_>) -> Result<()> {
    let dtype = DType::from_scalar_type(x.dtype())?;
    if !dtype.is_floating() {
        return Err(Error::runtime(format!(
            "torch.frexp() only supports floating-point dtypes, but got {}",
            dtype.name()
        )));
    }
    let e = DType::from_scalar_type(exponent.dtype())?;
    if e != DType::I32 {
        return Err(Error::runtime(format!("torch.frexp() expects exponent to have int dtype but got {}", e.name())));
    }
    run(&ops::FrexpMantissa {}, [Input::Tensor(x)], mantissa)?;
    let config = Config { output_dtype: Some(DType::I32), safe_cast_to_output: false, ..Config::ARITHMETIC };
    elementwise("frexp", config, &exponent, &[Input::Tensor(x)], |p| {
        let it = &p.iter;
        match p.common {
            DType::F32 => loops::unary::<f32, i32>(it, |v| s::frexp(f64::from(v)).1),
            DType::F64 => loops::unary::<f64, i32>(it, |v| s::frexp(v).1),
            DType::F16 => loops::unary::<f16, i32>(it, |v| s::frexp(f64::from(v.to_f32())).1),
            DType::BF16 => loops::unary::<bf16, i32>(it, |v| s::frexp(f64::from(v.to_f32())).1),
            other => return Err(not_implemented("frexp", other)),
        }
        Ok(())
    })
}

/// `torch.nan_to_num`.
pub fn nan_to_num(
    self_: TensorRef<'_>,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
    out: TensorRef<'_>,
) -> Result<()> {
    // The defaults are the dtype's largest finite values (computing in f32 would turn half's
    // into infinities).
    let max = match DType::from_scalar_type(self_.dtype())? {
        DType::F16 => f64::from(f16::MAX),
        DType::BF16 => f64::from(bf16::MAX),
        DType::F32 | DType::C64 => f64::from(f32::MAX),
        _ => f64::MAX,
    };
    let op = ops::NanToNum { nan: nan.unwrap_or(0.0), posinf: posinf.unwrap_or(max), neginf: neginf.unwrap_or(-max) };
    run(&op, [Input::Tensor(self_)], out)
}

/// Bit shifts (`<<`, `>>`, `bitwise_left_shift`, ...) of integer tensors, as ATen defines them
/// for shift counts outside the type's width: 0 for left shifts, the sign for right shifts.
pub fn shift(a: Input<'_>, b: Input<'_>, left: bool, out: TensorRef<'_>) -> Result<()> {
    let name = if left { "lshift" } else { "rshift" };
    elementwise(name, Config::ARITHMETIC, &out, &[a, b], |p| {
        macro_rules! shift {
            ($t:ty, $u:ty) => {{
                const BITS: i64 = <$t>::BITS as i64;
                if left {
                    loops::binary::<$t, $t, $t>(
                        &p.iter,
                        #[inline(always)]
                        |x, y| {
                            if (0..BITS).contains(&i64::from(y)) { ((x as $u) << y) as $t } else { 0 }
                        },
                    )
                } else {
                    loops::binary::<$t, $t, $t>(
                        &p.iter,
                        #[inline(always)]
                        |x, y| {
                            if (0..BITS).contains(&i64::from(y)) {
                                x >> y
                            } else if x < (0 as $t) {
                                x >> (BITS - 1)
                            } else {
                                0
                            }
                        },
                    )
                }
            }};
        }
        match p.common {
            DType::U8 => shift!(u8, u8),
            DType::I8 => shift!(i8, u8),
            DType::I16 => shift!(i16, u16),
            DType::I32 => shift!(i32, u32),
            DType::I64 => shift!(i64, u64),
            other => return Err(not_implemented(name, other)),
        }
        Ok(())
    })
}

/// The functional form of a shift.
pub fn shift_functional(a: TensorRef<'_>, b: Input<'_>, left: bool) -> Result<Tensor> {
    let out = new_output(result_dtype(Config::ARITHMETIC, &[Input::Tensor(a), b])?, &[Input::Tensor(a), b])?;
    shift(Input::Tensor(a), b, left, out.as_ref())?;
    Ok(out)
}

/// The in-place form of a shift.
pub fn shift_in_place(a: TensorRef<'_>, b: Input<'_>, left: bool) -> Result<()> {
    check_in_place(&a, &[Input::Tensor(a), b])?;
    shift(Input::Tensor(a), b, left, a)
}

/// `torch.nn.functional.gelu(x, approximate)` into `out` (also addmm's fused epilogue, matmul.rs).
pub fn gelu(x: TensorRef<'_>, approximate: &str, out: TensorRef<'_>) -> Result<()> {
    if gelu_tanh(approximate)? {
        unary::run::<vector_rows::GeluTanh>(x, out)
    } else {
        unary::run::<vector_rows::Gelu>(x, out)
    }
}

/// gelu and silu as rows of the unary engine (defined by its table's macro), so that contiguous float32/float64 runs take
/// math/vmath.rs's vector functions (tested there against f64 references) as the unary table's
/// exp and tanh rows do; other runs and dtypes compute the pointwise table's scalar formulas. The
/// pointwise table has no vector hook, and these were 4x CPU's time with a libm call per element.
mod vector_rows {
    use crate::engine::scalar as s;
    use num_traits::One;

    crate::define_unary_ops! {
        gelu_out, Gelu, "gelu", false { f: |x| s::gelu(x); v: crate::math::vmath::gelu_f32_raw, crate::math::vmath::gelu_f64_raw; }
        gelu_out, GeluTanh, "gelu", false { f: |x| s::gelu_tanh(x); v: crate::math::vmath::gelu_tanh_f32_raw, crate::math::vmath::gelu_tanh_f64_raw; }
        silu_out, Silu, "silu", false {
            f: |x| x / (T::one() + (-x).vexp());
            c: |z| z / (num_complex::Complex::<T>::one() + (-z).exp());
            v: crate::math::vmath::silu_f32_raw, crate::math::vmath::silu_f64_raw;
        }
    }
}

/// This family's kernels: group `pointwise` of regen.toml's `[implement]`.
impl crate::PointwiseKernels for crate::Reference {
    fn where_self_out(&self, c: TensorRef<'_>, a: TensorRef<'_>, b: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        where_(c, a, b, out)
    }
    fn where_self(&self, c: TensorRef<'_>, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<Tensor> {
        where_functional(c, a, b)
    }
    fn masked_fill_inplace_scalar(&self, x: TensorRef<'_>, mask: TensorRef<'_>, value: Scalar) -> Result<()> {
        masked_fill(x, mask, value)
    }
    fn masked_fill_inplace_tensor(&self, x: TensorRef<'_>, mask: TensorRef<'_>, value: TensorRef<'_>) -> Result<()> {
        masked_fill(x, mask, item(&value, "masked_fill_")?)
    }
    fn lerp_scalar_out(&self, x: TensorRef<'_>, end: TensorRef<'_>, w: Scalar, out: TensorRef<'_>) -> Result<()> {
        lerp(x, end, Input::Scalar(w), out)
    }
    fn lerp_tensor_out(
        &self,
        x: TensorRef<'_>,
        end: TensorRef<'_>,
        w: TensorRef<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        lerp(x, end, Input::Tensor(w), out)
    }
    fn addcmul_out(
        &self,
        x: TensorRef<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        value: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let op = ops::Addcmul { value: Param::from_scalar(value) };
        run(&op, [Input::Tensor(x), Input::Tensor(a), Input::Tensor(b)], out)
    }
    fn addcdiv_out(
        &self,
        x: TensorRef<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        value: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        addcdiv(x, a, b, value, out)
    }
    fn clamp_out(&self, x: TensorRef<'_>, lo: Option<Scalar>, hi: Option<Scalar>, out: TensorRef<'_>) -> Result<()> {
        clamp(x, lo.map(Input::Scalar), hi.map(Input::Scalar), out)
    }
    fn clamp_tensor_out(
        &self,
        x: TensorRef<'_>,
        lo: Option<TensorRef<'_>>,
        hi: Option<TensorRef<'_>>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        clamp(x, lo.map(Input::Tensor), hi.map(Input::Tensor), out)
    }
    fn clamp_min_out(&self, x: TensorRef<'_>, lo: Scalar, out: TensorRef<'_>) -> Result<()> {
        clamp(x, Some(Input::Scalar(lo)), None, out)
    }
    fn clamp_min_tensor_out(&self, x: TensorRef<'_>, lo: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        clamp(x, Some(Input::Tensor(lo)), None, out)
    }
    fn clamp_max_out(&self, x: TensorRef<'_>, hi: Scalar, out: TensorRef<'_>) -> Result<()> {
        clamp(x, None, Some(Input::Scalar(hi)), out)
    }
    fn clamp_max_tensor_out(&self, x: TensorRef<'_>, hi: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        clamp(x, None, Some(Input::Tensor(hi)), out)
    }
    fn threshold_out(&self, x: TensorRef<'_>, threshold: Scalar, value: Scalar, out: TensorRef<'_>) -> Result<()> {
        let op = ops::Threshold { threshold: Param::from_scalar(threshold), value: Param::from_scalar(value) };
        run(&op, [Input::Tensor(x)], out)
    }
    fn threshold_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        threshold: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(
            &ops::ThresholdBackward { threshold: Param::from_scalar(threshold) },
            [Input::Tensor(g), Input::Tensor(x)],
            out,
        )
    }
    fn gelu_out(&self, x: TensorRef<'_>, approximate: &str, out: TensorRef<'_>) -> Result<()> {
        gelu(x, approximate, out)
    }
    fn gelu_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        approximate: &str,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let op = ops::GeluBackward { tanh: gelu_tanh(approximate)? };
        run(&op, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn silu_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        unary::run::<vector_rows::Silu>(x, out)
    }
    fn silu_backward_grad_input(&self, g: TensorRef<'_>, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::SiluBackward {}, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn silu_backward(&self, g: TensorRef<'_>, x: TensorRef<'_>) -> Result<Tensor> {
        functional(&ops::SiluBackward {}, [Input::Tensor(g), Input::Tensor(x)])
    }
    fn mish_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Mish {}, [Input::Tensor(x)], out)
    }
    fn elu_out(
        &self,
        x: TensorRef<'_>,
        alpha: Scalar,
        scale: Scalar,
        input_scale: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let op = ops::Elu { alpha: alpha.to_f64(), scale: scale.to_f64(), input_scale: input_scale.to_f64() };
        run(&op, [Input::Tensor(x)], out)
    }
    fn elu_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        alpha: Scalar,
        scale: Scalar,
        input_scale: Scalar,
        is_result: bool,
        y: TensorRef<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let op = ops::EluBackward {
            alpha: alpha.to_f64(),
            scale: scale.to_f64(),
            input_scale: input_scale.to_f64(),
            is_result,
        };
        run(&op, [Input::Tensor(g), Input::Tensor(y)], out)
    }
    fn leaky_relu_out(&self, x: TensorRef<'_>, slope: Scalar, out: TensorRef<'_>) -> Result<()> {
        run(&ops::LeakyRelu { slope: slope.to_f64() }, [Input::Tensor(x)], out)
    }
    fn leaky_relu_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        slope: Scalar,
        _is_result: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(&ops::LeakyReluBackward { slope: slope.to_f64() }, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn hardtanh_out(&self, x: TensorRef<'_>, lo: Scalar, hi: Scalar, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Hardtanh { lo: Param::from_scalar(lo), hi: Param::from_scalar(hi) }, [Input::Tensor(x)], out)
    }
    fn hardtanh(&self, x: TensorRef<'_>, lo: Scalar, hi: Scalar) -> Result<Tensor> {
        functional(&ops::Hardtanh { lo: Param::from_scalar(lo), hi: Param::from_scalar(hi) }, [Input::Tensor(x)])
    }
    fn hardtanh_inplace(&self, x: TensorRef<'_>, lo: Scalar, hi: Scalar) -> Result<()> {
        in_place(&ops::Hardtanh { lo: Param::from_scalar(lo), hi: Param::from_scalar(hi) }, [Input::Tensor(x)])
    }
    fn hardtanh_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        lo: Scalar,
        hi: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(&ops::HardtanhBackward { lo: lo.to_f64(), hi: hi.to_f64() }, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn hardtanh_backward(&self, g: TensorRef<'_>, x: TensorRef<'_>, lo: Scalar, hi: Scalar) -> Result<Tensor> {
        functional(&ops::HardtanhBackward { lo: lo.to_f64(), hi: hi.to_f64() }, [Input::Tensor(g), Input::Tensor(x)])
    }
    fn hardsigmoid_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Hardsigmoid {}, [Input::Tensor(x)], out)
    }
    fn hardsigmoid_backward_grad_input(&self, g: TensorRef<'_>, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::HardsigmoidBackward {}, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn hardswish_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Hardswish {}, [Input::Tensor(x)], out)
    }
    fn hardswish(&self, x: TensorRef<'_>) -> Result<Tensor> {
        functional(&ops::Hardswish {}, [Input::Tensor(x)])
    }
    fn hardswish_inplace(&self, x: TensorRef<'_>) -> Result<()> {
        in_place(&ops::Hardswish {}, [Input::Tensor(x)])
    }
    fn hardswish_backward(&self, g: TensorRef<'_>, x: TensorRef<'_>) -> Result<Tensor> {
        functional(&ops::HardswishBackward {}, [Input::Tensor(g), Input::Tensor(x)])
    }
    fn softplus_out(&self, x: TensorRef<'_>, beta: Scalar, threshold: Scalar, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Softplus { beta: beta.to_f64(), threshold: threshold.to_f64() }, [Input::Tensor(x)], out)
    }
    fn softplus_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        beta: Scalar,
        threshold: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let op = ops::SoftplusBackward { beta: beta.to_f64(), threshold: threshold.to_f64() };
        run(&op, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn softshrink_out(&self, x: TensorRef<'_>, lambd: Scalar, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Softshrink { lambd: lambd.to_f64() }, [Input::Tensor(x)], out)
    }
    fn softshrink_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        lambd: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(&ops::Shrinkage { lambd: lambd.to_f64() }, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn hardshrink_out(&self, x: TensorRef<'_>, lambd: Scalar, out: TensorRef<'_>) -> Result<()> {
        run(&ops::Hardshrink { lambd: lambd.to_f64() }, [Input::Tensor(x)], out)
    }
    fn hardshrink_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        lambd: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(&ops::Shrinkage { lambd: lambd.to_f64() }, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn sigmoid_backward_grad_input(&self, g: TensorRef<'_>, y: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::SigmoidBackward {}, [Input::Tensor(g), Input::Tensor(y)], out)
    }
    fn tanh_backward_grad_input(&self, g: TensorRef<'_>, y: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run(&ops::TanhBackward {}, [Input::Tensor(g), Input::Tensor(y)], out)
    }
    fn log_sigmoid_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        buffer: TensorRef<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(&ops::LogSigmoidBackward {}, [Input::Tensor(x), Input::Tensor(buffer), Input::Tensor(g)], out)
    }
    fn log_sigmoid_backward(&self, g: TensorRef<'_>, x: TensorRef<'_>, buffer: TensorRef<'_>) -> Result<Tensor> {
        functional(&ops::LogSigmoidBackward {}, [Input::Tensor(x), Input::Tensor(buffer), Input::Tensor(g)])
    }
    fn log_sigmoid_forward_output(&self, x: TensorRef<'_>, output: TensorRef<'_>, buffer: TensorRef<'_>) -> Result<()> {
        run(&ops::LogSigmoid {}, [Input::Tensor(x)], output)?;
        run(&ops::LogSigmoidBuffer {}, [Input::Tensor(x)], buffer)
    }
    fn log_sigmoid_forward(&self, x: TensorRef<'_>) -> Result<(Tensor, Tensor)> {
        Ok((
            functional(&ops::LogSigmoid {}, [Input::Tensor(x)])?,
            functional(&ops::LogSigmoidBuffer {}, [Input::Tensor(x)])?,
        ))
    }
    fn _prelu_kernel(&self, x: TensorRef<'_>, w: TensorRef<'_>) -> Result<Tensor> {
        functional(&ops::Prelu {}, [Input::Tensor(x), Input::Tensor(w)])
    }
    fn _prelu_kernel_backward(&self, g: TensorRef<'_>, x: TensorRef<'_>, w: TensorRef<'_>) -> Result<(Tensor, Tensor)> {
        let inputs = [Input::Tensor(x), Input::Tensor(w), Input::Tensor(g)];
        Ok((functional(&ops::PreluGradInput {}, inputs)?, functional(&ops::PreluGradWeight {}, inputs)?))
    }
    fn frexp_tensor_out(&self, x: TensorRef<'_>, mantissa: TensorRef<'_>, exponent: TensorRef<'_>) -> Result<()> {
        frexp(x, mantissa, exponent)
    }
    fn nan_to_num_out(
        &self,
        x: TensorRef<'_>,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nan_to_num(x, nan, posinf, neginf, out)
    }
    fn round_decimals_out(&self, x: TensorRef<'_>, decimals: i64, out: TensorRef<'_>) -> Result<()> {
        run(&ops::RoundDecimals { decimals }, [Input::Tensor(x)], out)
    }
    fn rsub_tensor(&self, x: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar) -> Result<Tensor> {
        // other - alpha * self.
        let (a, b) = (Input::Tensor(other), Input::Tensor(x));
        let out = crate::engine::operands::new_output(
            crate::engine::operands::result_dtype(crate::engine::operands::Config::ARITHMETIC, &[b, a])?,
            &[b, a],
        )?;
        crate::ops::binary::run::<crate::ops::binary::ops::Sub>(a, b, Some(alpha), out.as_ref())?;
        Ok(out)
    }
    fn complex_out(&self, re: TensorRef<'_>, im: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        complex(re, im, out, false)
    }
    fn polar_out(&self, abs: TensorRef<'_>, angle: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        complex(abs, angle, out, true)
    }
    fn fill_inplace_tensor(&self, x: TensorRef<'_>, value: TensorRef<'_>) -> Result<()> {
        regen_runtime::bootstrap::fill_(x, item(&value, "fill_")?)
    }
    fn zero_inplace(&self, x: TensorRef<'_>) -> Result<()> {
        regen_runtime::bootstrap::fill_(x, Scalar::Int(0))
    }
    fn polygamma_out(&self, n: i64, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        if n < 0 {
            return Err(Error::runtime("polygamma(n, x) does not support negative n."));
        }
        run(&ops::Polygamma { n }, [Input::Tensor(x)], out)
    }
    fn mvlgamma_out(&self, x: TensorRef<'_>, p: i64, out: TensorRef<'_>) -> Result<()> {
        mvlgamma(x, p, out)
    }
    fn logit_out(&self, x: TensorRef<'_>, eps: Option<f64>, out: TensorRef<'_>) -> Result<()> {
        run(&logit(&x, eps)?, [Input::Tensor(x)], out)
    }
    fn logit(&self, x: TensorRef<'_>, eps: Option<f64>) -> Result<Tensor> {
        functional(&logit(&x, eps)?, [Input::Tensor(x)])
    }
    fn logit_inplace(&self, x: TensorRef<'_>, eps: Option<f64>) -> Result<()> {
        in_place(&logit(&x, eps)?, [Input::Tensor(x)])
    }
    fn logit_backward_grad_input(
        &self,
        g: TensorRef<'_>,
        x: TensorRef<'_>,
        eps: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        run(&ops::LogitBackward { eps }, [Input::Tensor(g), Input::Tensor(x)], out)
    }
    fn isnan(&self, x: TensorRef<'_>) -> Result<Tensor> {
        let out = crate::engine::operands::new_output(crate::engine::dtype::DType::Bool, &[Input::Tensor(x)])?;
        run_test(&ops::Isnan {}, [Input::Tensor(x)], out.as_ref())?;
        Ok(out)
    }
    fn isposinf_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run_test(&ops::Isposinf {}, [Input::Tensor(x)], out)
    }
    fn isneginf_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run_test(&ops::Isneginf {}, [Input::Tensor(x)], out)
    }
    fn signbit_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run_test(&ops::Signbit {}, [Input::Tensor(x)], out)
    }
    fn logical_not_out(&self, x: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        run_test(&ops::LogicalNot {}, [Input::Tensor(x)], out)
    }
    fn bitwise_left_shift_tensor_out(&self, a: TensorRef<'_>, b: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        shift(Input::Tensor(a), Input::Tensor(b), true, out)
    }
    fn bitwise_right_shift_tensor_out(&self, a: TensorRef<'_>, b: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        shift(Input::Tensor(a), Input::Tensor(b), false, out)
    }
    fn dunder_lshift_scalar(&self, a: TensorRef<'_>, b: Scalar) -> Result<Tensor> {
        shift_functional(a, Input::Scalar(b), true)
    }
    fn dunder_lshift_tensor(&self, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<Tensor> {
        shift_functional(a, Input::Tensor(b), true)
    }
    fn dunder_ilshift_scalar(&self, a: TensorRef<'_>, b: Scalar) -> Result<()> {
        shift_in_place(a, Input::Scalar(b), true)
    }
    fn dunder_ilshift_tensor(&self, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<()> {
        shift_in_place(a, Input::Tensor(b), true)
    }
    fn dunder_rshift_scalar(&self, a: TensorRef<'_>, b: Scalar) -> Result<Tensor> {
        shift_functional(a, Input::Scalar(b), false)
    }
    fn dunder_rshift_tensor(&self, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<Tensor> {
        shift_functional(a, Input::Tensor(b), false)
    }
    fn dunder_irshift_scalar(&self, a: TensorRef<'_>, b: Scalar) -> Result<()> {
        shift_in_place(a, Input::Scalar(b), false)
    }
    fn dunder_irshift_tensor(&self, a: TensorRef<'_>, b: TensorRef<'_>) -> Result<()> {
        shift_in_place(a, Input::Tensor(b), false)
    }
}

/// `approximate` of gelu: true for "tanh".
pub fn gelu_tanh(approximate: &str) -> Result<bool> {
    match approximate {
        "none" => Ok(false),
        "tanh" => Ok(true),
        other => Err(Error::runtime(format!("approximate argument must be either none or tanh, got {other}"))),
    }
}
