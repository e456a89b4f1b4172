//! The fused optimizer steps of `torch.optim`'s `fused=True` (`_fused_adam_`, `_fused_adamw_`,
//! `_fused_sgd_`, `_fused_adagrad_`, each with a float or a tensor learning rate), as ATen's CPU
//! kernels compute them (`native/cpu/Fused{Adam,SGD,Adagrad}Kernel.cpp`, their vectorised
//! path): float16 and bfloat16 step in f32, constants are rounded to the compute type first.
//!
//! One driver (`step_lists`) checks the tensor lists, honours `found_inf` (the step is skipped
//! when the GradScaler found an inf) and `grad_scale` (gradients are unscaled in place), and walks
//! each parameter's elements in parallel; each optimizer is a `Rule`: its per-tensor
//! coefficients and its per-element update.

use regen_runtime::{Error, Result, TensorList, TensorRef};

use crate::engine::dtype::DType;
use crate::engine::dtype::float_dtype;
use crate::engine::iter::GRAIN;
use crate::engine::scalar::Real;
use crate::ops::norm::{Elem, read_f64};

/// One optimizer: `N` tensors per parameter (`[param, grad, state...]`).
trait Rule<const N: usize>: Sync {
    /// The op, for messages.
    fn op(&self) -> &'static str;
    /// Which slots the update writes back (the gradient is written only when unscaled). A slot
    /// whose list is left empty reads the parameter and must not be written.
    fn writes(&self) -> [bool; N];
    /// Per-tensor coefficients (from the tensor's step count, if the optimizer keeps one).
    type Coef: Copy + Sync;
    fn coef(&self, step: Option<f64>) -> Self::Coef;
    /// Updates one element's slots in the compute type.
    fn update<A: Real>(&self, c: &Self::Coef, x: &mut [A; N]);
}

#[inline(always)]
fn k<A: Real>(x: f64) -> A {
    A::from_f64(x)
}

/// The value of a one-element float tensor (a step count, a learning rate, a scale).
fn scalar_of(t: &TensorRef<'_>, what: &str) -> Result<f64> {
    if t.numel() != 1 {
        return Err(Error::runtime(format!("{what} must have one element, but has {}", t.numel())));
    }
    Ok(read_f64(t, 1)?[0])
}

/// Runs `rule` over every parameter: `lists` are the `N` tensor lists (`[params, grads, ...]`;
/// an empty list is a slot the rule does not use and reads the parameter), `steps` the
/// per-parameter step counts when the optimizer keeps them.
fn step_lists<R: Rule<N>, const N: usize>(
    rule: &R,
    lists: [TensorList<'_>; N],
    steps: Option<TensorList<'_>>,
    grad_scale: Option<TensorRef<'_>>,
    found_inf: Option<TensorRef<'_>>,
) -> Result<()> {
    let op = rule.op();
    let writes = rule.writes();
    if let Some(f) = &found_inf
        && scalar_of(f, "found_inf")? == 1.0
    {
        return Ok(());
    }
    let scale = grad_scale.as_ref().map(|g| scalar_of(g, "grad_scale")).transpose()?;
    let n = lists[0].len();
    for (k, l) in lists.iter().enumerate().skip(1) {
        if !(l.len() == n || (l.is_empty() && !writes[k])) {
            return Err(Error::runtime(format!(
                "{op}: expected every tensor list to have {n} tensors, but list {k} has {}",
                l.len()
            )));
        }
    }
    if let Some(s) = &steps
        && s.len() != n
    {
        return Err(Error::runtime(format!("{op}: expected {n} state_steps, but got {}", s.len())));
    }
    for i in 0..n {
        let param = lists[0].get(i).expect("i < n");
        let tensors: [TensorRef<'_>; N] = std::array::from_fn(|k| lists[k].get(i).unwrap_or(param));
        let dtype = float_dtype(&param, op)?;
        for t in &tensors {
            if t.numel() != param.numel()
                || DType::from_scalar_type(t.dtype())? != dtype
                || !regen_runtime::view::is_contiguous(t.sizes(), t.strides())
            {
                return Err(Error::runtime(format!(
                    "{op}: every tensor of a parameter must be contiguous, of its dtype ({}) and of its {} elements",
                    dtype.name(),
                    param.numel()
                )));
            }
        }
        let step = steps.as_ref().map(|s| scalar_of(&s.get(i).expect("i < n"), "state_step")).transpose()?;
        let c = rule.coef(step);
        let ptrs: [usize; N] = std::array::from_fn(|k| tensors[k].data_ptr() as usize);
        let len = param.numel() as usize;
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| elements::<T, R, N>(rule, &c, ptrs, len, scale), else unreachable!());
    }
    Ok(())
}

/// The elements of one parameter, in parallel chunks.
fn elements<T: Elem, R: Rule<N>, const N: usize>(
    rule: &R,
    c: &R::Coef,
    ptrs: [usize; N],
    len: usize,
    scale: Option<f64>,
) where
    T::Acc: Real,
{
    let writes = rule.writes();
    regen_runtime::host::parallel_for(len, GRAIN, |lo, hi| {
        let scale = scale.map(k::<T::Acc>);
        for e in lo..hi {
            // SAFETY: element e < len of each contiguous tensor (checked by the driver); chunks
            // are disjoint, and a slot shared with the parameter is never written.
            unsafe {
                let mut x: [T::Acc; N] = std::array::from_fn(|s| (*(ptrs[s] as *const T).add(e)).to_acc());
                if let Some(s) = scale {
                    x[1] = x[1] / s;
                    *(ptrs[1] as *mut T).add(e) = T::from_acc(x[1]);
                }
                rule.update(c, &mut x);
                for s in 0..N {
                    if writes[s] {
                        *(ptrs[s] as *mut T).add(e) = T::from_acc(x[s]);
                    }
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Adam and AdamW
// ---------------------------------------------------------------------------------------------

/// Adam (`decoupled == false`) and AdamW: slots `[param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq]`.
struct Adam {
    lr: f64,
    beta1: f64,
    beta2: f64,
    weight_decay: f64,
    eps: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
}

#[derive(Clone, Copy)]
struct AdamCoef {
    step_size: f64,
    bc2_sqrt: f64,
}

impl Rule<5> for Adam {
    fn op(&self) -> &'static str {
        if self.decoupled { "_fused_adamw_" } else { "_fused_adam_" }
    }
    // max_exp_avg_sq is written only with amsgrad; without it its list is empty and the slot
    // reads the parameter (`update` leaves it as loaded).
    fn writes(&self) -> [bool; 5] {
        [true, false, true, true, self.amsgrad]
    }
    type Coef = AdamCoef;

    fn coef(&self, step: Option<f64>) -> AdamCoef {
        let step = step.unwrap_or(1.0);
        let bias_correction1 = 1.0 - self.beta1.powf(step);
        let bias_correction2 = 1.0 - self.beta2.powf(step);
        AdamCoef { step_size: self.lr / bias_correction1, bc2_sqrt: bias_correction2.sqrt() }
    }

    #[inline(always)]
    fn update<A: Real>(&self, c: &AdamCoef, x: &mut [A; 5]) {
        let [mut p, mut g, mut m, mut v, mut mx] = *x;
        if self.maximize {
            g = g * k(-1.0);
        }
        if self.weight_decay != 0.0 {
            if self.decoupled {
                p = p * k(1.0 - self.lr * self.weight_decay);
            } else {
                g = g + p * k(self.weight_decay);
            }
        }
        // exp_avg.lerp_(grad, 1 - beta1), as ATen's vectorised lerp: from the nearer end.
        let w: A = k(1.0 - self.beta1);
        let (coeff, base) = if w.abs() < k(0.5) { (w, m) } else { (w - k(1.0), g) };
        m = coeff.mul_add(g - m, base);
        v = v * k(self.beta2) + k::<A>(1.0 - self.beta2) * g * g;
        let root = if self.amsgrad {
            mx = if mx > v || mx.is_nan() { mx } else { v };
            mx.sqrt()
        } else {
            v.sqrt()
        };
        let denom = root / k(c.bc2_sqrt) + k(self.eps);
        p = p + k::<A>(-c.step_size) * m / denom;
        *x = [p, g, m, v, mx];
    }
}

#[allow(clippy::too_many_arguments)]
pub fn adam(
    decoupled: bool,
    params: TensorList<'_>,
    grads: TensorList<'_>,
    exp_avgs: TensorList<'_>,
    exp_avg_sqs: TensorList<'_>,
    max_exp_avg_sqs: TensorList<'_>,
    state_steps: TensorList<'_>,
    lr: f64,
    [beta1, beta2, weight_decay, eps]: [f64; 4],
    amsgrad: bool,
    maximize: bool,
    grad_scale: Option<TensorRef<'_>>,
    found_inf: Option<TensorRef<'_>>,
) -> Result<()> {
    let rule = Adam { lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled };
    if amsgrad && max_exp_avg_sqs.len() != params.len() {
        return Err(Error::runtime(format!(
            "{}: amsgrad needs {} max_exp_avg_sqs, but got {}",
            rule.op(),
            params.len(),
            max_exp_avg_sqs.len()
        )));
    }
    // Without amsgrad the slot's list is left out: it reads the parameter and is not written.
    let max_list = if amsgrad { max_exp_avg_sqs } else { TensorList::default() };
    step_lists(&rule, [params, grads, exp_avgs, exp_avg_sqs, max_list], Some(state_steps), grad_scale, found_inf)
}

// ---------------------------------------------------------------------------------------------
// SGD
// ---------------------------------------------------------------------------------------------

/// SGD with momentum: slots `[param, grad, momentum_buffer]` (the buffer slot reads the
/// parameter and is not written when there is no momentum).
struct Sgd {
    weight_decay: f64,
    momentum: f64,
    lr: f64,
    dampening: f64,
    nesterov: bool,
    maximize: bool,
    is_first_step: bool,
}

impl Rule<3> for Sgd {
    fn op(&self) -> &'static str {
        "_fused_sgd_"
    }
    fn writes(&self) -> [bool; 3] {
        [true, false, self.momentum != 0.0]
    }
    type Coef = ();
    fn coef(&self, _: Option<f64>) {}

    #[inline(always)]
    fn update<A: Real>(&self, _: &(), x: &mut [A; 3]) {
        let [mut p, mut g, mut buf] = *x;
        if self.maximize {
            g = g * k(-1.0);
        }
        if self.weight_decay != 0.0 {
            g = g + p * k(self.weight_decay);
        }
        if self.momentum != 0.0 {
            buf = if self.is_first_step { g } else { buf * k(self.momentum) + g * k(1.0 - self.dampening) };
            g = if self.nesterov { g + buf * k(self.momentum) } else { buf };
        }
        p = p - g * k(self.lr);
        *x = [p, g, buf];
    }
}

#[allow(clippy::too_many_arguments)]
pub fn sgd(
    params: TensorList<'_>,
    grads: TensorList<'_>,
    momentum_buffers: TensorList<'_>,
    [weight_decay, momentum, lr, dampening]: [f64; 4],
    nesterov: bool,
    maximize: bool,
    is_first_step: bool,
    grad_scale: Option<TensorRef<'_>>,
    found_inf: Option<TensorRef<'_>>,
) -> Result<()> {
    let rule = Sgd { weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step };
    if momentum != 0.0 && momentum_buffers.len() != params.len() {
        return Err(Error::runtime(format!(
            "_fused_sgd_: momentum needs {} momentum buffers, but got {}",
            params.len(),
            momentum_buffers.len()
        )));
    }
    // Without momentum the buffer slot's list is left out (it reads the parameter).
    let buffers = if momentum != 0.0 { momentum_buffers } else { TensorList::default() };
    step_lists(&rule, [params, grads, buffers], None, grad_scale, found_inf)
}

// ---------------------------------------------------------------------------------------------
// Adagrad
// ---------------------------------------------------------------------------------------------

/// Adagrad: slots `[param, grad, state_sum]`.
struct Adagrad {
    lr: f64,
    lr_decay: f64,
    weight_decay: f64,
    eps: f64,
    maximize: bool,
}

impl Rule<3> for Adagrad {
    fn op(&self) -> &'static str {
        "_fused_adagrad_"
    }
    fn writes(&self) -> [bool; 3] {
        [true, false, true]
    }
    /// The decayed learning rate.
    type Coef = f64;

    fn coef(&self, step: Option<f64>) -> f64 {
        self.lr / (1.0 + (step.unwrap_or(1.0) - 1.0) * self.lr_decay)
    }

    #[inline(always)]
    fn update<A: Real>(&self, clr: &f64, x: &mut [A; 3]) {
        let [mut p, mut g, mut sum] = *x;
        if self.maximize {
            g = g * k(-1.0);
        }
        if self.weight_decay != 0.0 {
            g = g + p * k(self.weight_decay);
        }
        sum = sum + g * g;
        let std = sum.sqrt() + k(self.eps);
        p = p - k::<A>(*clr) * g / std;
        *x = [p, g, sum];
    }
}

#[allow(clippy::too_many_arguments)]
pub fn adagrad(
    params: TensorList<'_>,
    grads: TensorList<'_>,
    state_sums: TensorList<'_>,
    state_steps: TensorList<'_>,
    [lr, lr_decay, weight_decay, eps]: [f64; 4],
    maximize: bool,
    grad_scale: Option<TensorRef<'_>>,
    found_inf: Option<TensorRef<'_>>,
) -> Result<()> {
    let rule = Adagrad { lr, lr_decay, weight_decay, eps, maximize };
    step_lists(&rule, [params, grads, state_sums], Some(state_steps), grad_scale, found_inf)
}

/// A learning rate given as a tensor (the `.tensor_lr` overloads).
pub fn lr_of(lr: TensorRef<'_>) -> Result<f64> {
    scalar_of(&lr, "lr")
}

/// This family's kernels: group `optim` of regen.toml's `[implement]`.
impl crate::OptimKernels for crate::Reference {
    fn _fused_adam_inplace(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        exp_avgs: regen_runtime::TensorList<'_>,
        exp_avg_sqs: regen_runtime::TensorList<'_>,
        max_exp_avg_sqs: regen_runtime::TensorList<'_>,
        state_steps: regen_runtime::TensorList<'_>,
        lr: f64,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        amsgrad: bool,
        maximize: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        adam(
            false,
            self_,
            grads,
            exp_avgs,
            exp_avg_sqs,
            max_exp_avg_sqs,
            state_steps,
            lr,
            [beta1, beta2, weight_decay, eps],
            amsgrad,
            maximize,
            grad_scale,
            found_inf,
        )
    }

    fn _fused_adam_inplace_tensor_lr(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        exp_avgs: regen_runtime::TensorList<'_>,
        exp_avg_sqs: regen_runtime::TensorList<'_>,
        max_exp_avg_sqs: regen_runtime::TensorList<'_>,
        state_steps: regen_runtime::TensorList<'_>,
        lr: TensorRef<'_>,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        amsgrad: bool,
        maximize: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        use crate::ops::optim as o;
        o::adam(
            false,
            self_,
            grads,
            exp_avgs,
            exp_avg_sqs,
            max_exp_avg_sqs,
            state_steps,
            o::lr_of(lr)?,
            [beta1, beta2, weight_decay, eps],
            amsgrad,
            maximize,
            grad_scale,
            found_inf,
        )
    }

    fn _fused_adamw_inplace(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        exp_avgs: regen_runtime::TensorList<'_>,
        exp_avg_sqs: regen_runtime::TensorList<'_>,
        max_exp_avg_sqs: regen_runtime::TensorList<'_>,
        state_steps: regen_runtime::TensorList<'_>,
        lr: f64,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        amsgrad: bool,
        maximize: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        adam(
            true,
            self_,
            grads,
            exp_avgs,
            exp_avg_sqs,
            max_exp_avg_sqs,
            state_steps,
            lr,
            [beta1, beta2, weight_decay, eps],
            amsgrad,
            maximize,
            grad_scale,
            found_inf,
        )
    }

    fn _fused_adamw_inplace_tensor_lr(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        exp_avgs: regen_runtime::TensorList<'_>,
        exp_avg_sqs: regen_runtime::TensorList<'_>,
        max_exp_avg_sqs: regen_runtime::TensorList<'_>,
        state_steps: regen_runtime::TensorList<'_>,
        lr: TensorRef<'_>,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        amsgrad: bool,
        maximize: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        use crate::ops::optim as o;
        o::adam(
            true,
            self_,
            grads,
            exp_avgs,
            exp_avg_sqs,
            max_exp_avg_sqs,
            state_steps,
            o::lr_of(lr)?,
            [beta1, beta2, weight_decay, eps],
            amsgrad,
            maximize,
            grad_scale,
            found_inf,
        )
    }

    #[cfg(regen_has_op = "_fused_sgd_")]
    fn _fused_sgd_inplace(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        momentum_buffer_list: regen_runtime::TensorList<'_>,
        weight_decay: f64,
        momentum: f64,
        lr: f64,
        dampening: f64,
        nesterov: bool,
        maximize: bool,
        is_first_step: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        sgd(
            self_,
            grads,
            momentum_buffer_list,
            [weight_decay, momentum, lr, dampening],
            nesterov,
            maximize,
            is_first_step,
            grad_scale,
            found_inf,
        )
    }

    #[cfg(regen_has_op = "_fused_sgd_.tensor_lr")]
    fn _fused_sgd_inplace_tensor_lr(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        momentum_buffer_list: regen_runtime::TensorList<'_>,
        weight_decay: f64,
        momentum: f64,
        lr: TensorRef<'_>,
        dampening: f64,
        nesterov: bool,
        maximize: bool,
        is_first_step: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        use crate::ops::optim as o;
        o::sgd(
            self_,
            grads,
            momentum_buffer_list,
            [weight_decay, momentum, o::lr_of(lr)?, dampening],
            nesterov,
            maximize,
            is_first_step,
            grad_scale,
            found_inf,
        )
    }

    #[cfg(regen_has_op = "_fused_adagrad_")]
    fn _fused_adagrad_inplace(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        state_sums: regen_runtime::TensorList<'_>,
        state_steps: regen_runtime::TensorList<'_>,
        lr: f64,
        lr_decay: f64,
        weight_decay: f64,
        eps: f64,
        maximize: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        adagrad(
            self_,
            grads,
            state_sums,
            state_steps,
            [lr, lr_decay, weight_decay, eps],
            maximize,
            grad_scale,
            found_inf,
        )
    }

    #[cfg(regen_has_op = "_fused_adagrad_.tensor_lr")]
    fn _fused_adagrad_inplace_tensor_lr(
        &self,
        self_: regen_runtime::TensorList<'_>,
        grads: regen_runtime::TensorList<'_>,
        state_sums: regen_runtime::TensorList<'_>,
        state_steps: regen_runtime::TensorList<'_>,
        lr: TensorRef<'_>,
        lr_decay: f64,
        weight_decay: f64,
        eps: f64,
        maximize: bool,
        grad_scale: Option<TensorRef<'_>>,
        found_inf: Option<TensorRef<'_>>,
    ) -> Result<()> {
        use crate::ops::optim as o;
        o::adagrad(
            self_,
            grads,
            state_sums,
            state_steps,
            [o::lr_of(lr)?, lr_decay, weight_decay, eps],
            maximize,
            grad_scale,
            found_inf,
        )
    }
}
