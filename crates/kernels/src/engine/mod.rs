//! The engine every op family runs on: the dtype table and PyTorch's type promotion ([`dtype`]),
//! the TensorIterator ([`iter`]) with its operands ([`operands`]) and inner loops ([`loops`]), the
//! one dtype -> loop dispatch of the elementwise families ([`dispatch`]), the scalar math of the op
//! tables ([`scalar`]), and the vector tier the kernels run ([`Capability`], the `simd_fn!` macro).

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
                if $crate::engine::has_avx512() {
                    // SAFETY: the features were detected.
                    return unsafe { avx512::<$T>($($a),*) };
                }
                if $crate::engine::has_avx2() {
                    // SAFETY: the features were detected.
                    return unsafe { avx2::<$T>($($a),*) };
                }
            }
            body::<$T>($($a),*)
        }
    };
}
pub(crate) use simd_fn;

/// The widest vector instructions the device's own kernels use: what the CPU has, or less when
/// `REGEN_CPU_CAPABILITY` asks for it (`avx512`, `avx2`, or `default` / `scalar` for no explicit
/// vectors), read once at the first kernel, as ATen reads `ATEN_CPU_CAPABILITY`. Lowering it
/// proves the suite does not depend on one machine's vector width: the tiers compute the same
/// values where a kernel promises that (`simd_fn!`, vmath), and reductions whose order follows the
/// width are compared with CPU within their summation bound. A request above what the CPU has is
/// capped at what it has. (The gemm crate picks its own micro-kernels.)
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Capability {
    Scalar,
    Avx2,
    Avx512,
}

impl Capability {
    /// The name `REGEN_CPU_CAPABILITY` takes (a C string: the library exports it to the tests).
    pub fn name(self) -> &'static std::ffi::CStr {
        match self {
            Capability::Scalar => c"default",
            Capability::Avx2 => c"avx2",
            Capability::Avx512 => c"avx512",
        }
    }

    /// The tier `REGEN_CPU_CAPABILITY=value` asks for; None for a value it does not know.
    pub fn parse(value: &str) -> Option<Capability> {
        match value.trim().to_ascii_lowercase().as_str() {
            "default" | "scalar" => Some(Capability::Scalar),
            "avx2" => Some(Capability::Avx2),
            "avx512" => Some(Capability::Avx512),
            _ => None,
        }
    }

    /// The best tier this CPU runs: AVX2 with FMA (and F16C), and for AVX-512 the subsets (F, BW, DQ, VL)
    /// the `simd_fn!` bodies' widest tier is compiled for.
    fn detected() -> Capability {
        #[cfg(target_arch = "x86_64")]
        {
            // F16C too (x86-64-v3 has all three): float16 runs convert with it (`dtype::Half`).
            let avx2 = std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("f16c");
            let avx512 = std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx512vl");
            if avx2 && avx512 {
                return Capability::Avx512;
            }
            if avx2 {
                return Capability::Avx2;
            }
        }
        Capability::Scalar
    }
}

/// The tier in force (see [`Capability`]). An unknown `REGEN_CPU_CAPABILITY` value is reported
/// once on stderr and ignored, as ATen ignores an unknown `ATEN_CPU_CAPABILITY`: a kernel cannot
/// fail for it.
pub fn capability() -> Capability {
    static CAPABILITY: std::sync::OnceLock<Capability> = std::sync::OnceLock::new();
    *CAPABILITY.get_or_init(|| {
        let detected = Capability::detected();
        match std::env::var("REGEN_CPU_CAPABILITY") {
            Ok(value) if !value.is_empty() => match Capability::parse(&value) {
                Some(asked) => asked.min(detected),
                None => {
                    eprintln!(
                        "regen: REGEN_CPU_CAPABILITY={value:?} is not one of avx512, avx2, default; using {}",
                        detected.name().to_string_lossy()
                    );
                    detected
                }
            },
            _ => detected,
        }
    })
}

/// Whether the kernels may run AVX2 with FMA (the `simd_fn!` bodies compiled for it).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    capability() >= Capability::Avx2
}

/// Whether the kernels may run their AVX-512 tier.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512() -> bool {
    capability() >= Capability::Avx512
}

/// pulp's dispatcher for the tier in force (pulp's own `Arch::new()` would take the best the CPU
/// has, whatever `REGEN_CPU_CAPABILITY` says).
pub(crate) fn pulp_arch() -> pulp::Arch {
    #[cfg(target_arch = "x86_64")]
    match capability() {
        Capability::Scalar => pulp::Arch::Scalar,
        Capability::Avx2 => pulp::x86::V3::try_new().map_or(pulp::Arch::Scalar, pulp::Arch::V3),
        Capability::Avx512 => pulp::Arch::new(),
    }
    #[cfg(not(target_arch = "x86_64"))]
    pulp::Arch::new()
}

pub mod dispatch;
pub mod dtype;
pub mod iter;
pub mod loops;
pub mod operands;
pub mod scalar;

#[cfg(test)]
mod capability_tests {
    use super::Capability;

    #[test]
    fn regen_cpu_capability_names_parse_and_order_as_tiers() {
        assert_eq!(Capability::parse("avx512"), Some(Capability::Avx512));
        assert_eq!(Capability::parse(" AVX2 "), Some(Capability::Avx2));
        assert_eq!(Capability::parse("default"), Some(Capability::Scalar));
        assert_eq!(Capability::parse("scalar"), Some(Capability::Scalar));
        assert_eq!(Capability::parse("sse4"), None);
        // A request is capped at what the CPU has: the lower of the two tiers.
        assert_eq!(Capability::Avx512.min(Capability::Avx2), Capability::Avx2);
        for tier in [Capability::Scalar, Capability::Avx2, Capability::Avx512] {
            assert_eq!(Capability::parse(tier.name().to_str().unwrap()), Some(tier));
        }
    }
}
