//! The device's kernels: one dtype table and one TensorIterator; one row per elementwise op
//! (unary, binary, pointwise), and one engine per family with a small struct or row per op
//! (copy, reduce, scan, index, shape, sort, unique, matmul, conv, norm, rnn, loss, pool, resample,
//! embedding, optim, amp, random), with `stl` the unstable sorting algorithms of CPU's C++ library for
//! sort's. Each family's `Kernels` methods are a macro
//! that [`crate::backend`] invokes in one line.

/// Runs the `#[inline(always)]` body `$body` compiled for AVX-512 or else AVX2+FMA when the
/// machine has it (a closure or a baseline function would be compiled for baseline x86-64 only).
/// The tiers compute the same values: Rust never reassociates float arithmetic, so wider vectors
/// change only how many lanes of the body's own order run at once (`mul_add` is fused in every
/// tier, by the FMA unit or by libm's `fma`).
macro_rules! simd_fn {
    ($(#[$m:meta])* fn $name:ident<$T:ident: $bound:path>($($a:ident: $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        #[allow(clippy::too_many_arguments)]
        fn $name<$T: $bound>($($a: $t),*) {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            fn body<$T: $bound>($($a: $t),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx,avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx2<$T: $bound>($($a: $t),*) {
                    body::<$T>($($a),*)
                }
                #[target_feature(enable = "avx,avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx512<$T: $bound>($($a: $t),*) {
                    body::<$T>($($a),*)
                }
                if $crate::kernels::has_avx512() {
                    // SAFETY: the features were detected.
                    return unsafe { avx512::<$T>($($a),*) };
                }
                if $crate::kernels::has_avx2() {
                    // SAFETY: the features were detected.
                    return unsafe { avx2::<$T>($($a),*) };
                }
            }
            body::<$T>($($a),*)
        }
    };
}

/// Whether the machine runs AVX2 with FMA (the kernels' `simd_fn!` bodies compiled for it).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// Whether the machine runs the AVX-512 subsets (F, BW, DQ, VL) the `simd_fn!` bodies' widest
/// tier is compiled for, besides AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512() -> bool {
    has_avx2()
        && std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512dq")
        && std::is_x86_feature_detected!("avx512vl")
}

pub mod amp;
pub mod binary;
pub mod conv;
pub mod copy;
pub mod custom;
pub mod dtype;
pub mod embedding;
pub mod index;
pub mod iter;
pub mod loops;
pub mod loss;
pub mod matmul;
pub mod norm;
pub mod optim;
pub mod pointwise;
pub mod pool;
pub mod random;
pub mod reduce;
pub mod resample;
pub mod resample_aa;
pub mod rnn;
pub mod samplers;
pub mod scalar;
pub mod scan;
pub mod shape;
pub mod sort;
pub mod special;
pub mod stl;
pub mod unary;
pub mod unique;
pub mod vmath;
