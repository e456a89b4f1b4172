//! The device's random generator: PyTorch's CPU generator (`CPUGeneratorImpl`) in Rust, so random
//! ops on the device draw the same numbers as on CPU after the same seed, and its state has the
//! byte layout of `torch.get_rng_state()`.
//!
//! The C++ glue's `at::GeneratorImpl` for the device holds an [`Engine`] (created, seeded,
//! serialised and freed through the `regen_runtime_rng_*` functions below); kernels reach it with
//! [`with_generator`], which locks it for the whole kernel, as ATen's kernels lock
//! `generator->mutex_`, so numbers are drawn without a call into C++ each.

use std::ffi::{c_char, c_void};
use std::sync::{Mutex, OnceLock};

use crate::args::Generator;
use crate::device::MAX_DEVICES;
use crate::error::{Error, Result};
use crate::glue::{installed, status};

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UMASK: u32 = 0x8000_0000;
const LMASK: u32 = 0x7fff_ffff;

/// `c10::detail::default_rng_seed_val`: the seed of a generator nobody seeded.
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// `at::mt19937` (ATen/core/MT19937RNGEngine.h) field for field: `left`/`next` are serialised
/// as they are, so a state taken mid-stream resumes at the same number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mt19937 {
    seed: u64,
    left: i32,
    seeded: bool,
    next: u32,
    state: [u32; N],
}

impl Mt19937 {
    /// Seeded with `seed & 0xffffffff`, keeping the whole seed to report.
    pub fn new(seed: u64) -> Self {
        let mut state = [0u32; N];
        state[0] = seed as u32;
        for j in 1..N {
            state[j] = 1_812_433_253u32.wrapping_mul(state[j - 1] ^ (state[j - 1] >> 30)).wrapping_add(j as u32);
        }
        Mt19937 { seed, left: 1, seeded: true, next: 0, state }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn is_valid(&self) -> bool {
        self.seeded && self.left > 0 && self.left as usize <= N && self.next as usize <= N
    }

    #[inline]
    fn twist(u: u32, v: u32) -> u32 {
        (((u & UMASK) | (v & LMASK)) >> 1) ^ if v & 1 != 0 { MATRIX_A } else { 0 }
    }

    fn next_state(&mut self) {
        let s = &mut self.state;
        self.left = N as i32;
        self.next = 0;
        for j in 0..N - M {
            s[j] = s[j + M] ^ Self::twist(s[j], s[j + 1]);
        }
        for j in N - M..N - 1 {
            s[j] = s[j + M - N] ^ Self::twist(s[j], s[j + 1]);
        }
        s[N - 1] = s[M - 1] ^ Self::twist(s[N - 1], s[0]);
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.next_state();
        }
        // A state read from bytes is checked by `is_valid`, so `next` stays below N here.
        let mut y = self.state[self.next as usize % N];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }
}

/// Size of `CPUGeneratorImplState` (CPUGeneratorImpl.cpp): the legacy THGenerator fields (seed,
/// left, seeded, next, 624 64-bit state words, three doubles and a flag of the old normal cache),
/// then the float normal cache and its flag.
pub const STATE_BYTES: usize = 5056;
const OFF_LEFT: usize = 8;
const OFF_SEEDED: usize = 12;
const OFF_NEXT: usize = 16;
const OFF_STATE: usize = 24;
const OFF_NORMAL_Y: usize = OFF_STATE + 8 * N + 8;
const OFF_NORMAL_VALID: usize = OFF_STATE + 8 * N + 24;
const OFF_FLOAT_NORMAL: usize = OFF_STATE + 8 * N + 32;
const OFF_FLOAT_VALID: usize = OFF_FLOAT_NORMAL + 4;

/// `at::CPUGeneratorImpl`: the engine and the second Box–Muller samples its scalar normal
/// distributions cache (one for `float`, one for `double`).
#[derive(Clone, Debug)]
pub struct CpuGenerator {
    pub engine: Mt19937,
    pub next_float_normal: Option<f32>,
    pub next_double_normal: Option<f64>,
}

impl CpuGenerator {
    pub fn new(seed: u64) -> Self {
        CpuGenerator { engine: Mt19937::new(seed), next_float_normal: None, next_double_normal: None }
    }

    /// `set_current_seed`: a fresh engine, caches dropped.
    pub fn set_seed(&mut self, seed: u64) {
        *self = Self::new(seed);
    }

    pub fn current_seed(&self) -> u64 {
        self.engine.seed()
    }

    /// `random()`: 32 random bits.
    #[inline]
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// `random64()`: two draws, the first in the high half.
    #[inline]
    pub fn random64(&mut self) -> u64 {
        let hi = self.engine.next_u32();
        let lo = self.engine.next_u32();
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// `uniform_real_distribution<float>(0, 1)`: 24 random bits.
    #[inline]
    pub fn uniform_f32(&mut self) -> f32 {
        (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// `uniform_real_distribution<double>(0, 1)`: 53 random bits of a 64-bit draw.
    #[inline]
    pub fn uniform_f64(&mut self) -> f64 {
        (self.random64() & ((1 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `normal_distribution<double>(mean, std)`: Box–Muller on two uniforms, the sine sample
    /// cached for the next call. ATen's compiled `val * std + mean` is a fused multiply-add.
    #[inline]
    pub fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        let ret = match self.next_double_normal.take() {
            Some(cached) => cached,
            None => {
                let u1 = self.uniform_f64();
                let u2 = self.uniform_f64();
                let r = (-2.0 * (-u2).ln_1p()).sqrt();
                let theta = 2.0 * std::f64::consts::PI * u1;
                self.next_double_normal = Some(r * theta.sin());
                r * theta.cos()
            }
        };
        ret.mul_add(std, mean)
    }

    /// The state as `torch.get_rng_state()` lays it out.
    pub fn get_state(&self) -> Vec<u8> {
        let mut out = vec![0u8; STATE_BYTES];
        let e = &self.engine;
        out[0..8].copy_from_slice(&e.seed.to_ne_bytes());
        out[OFF_LEFT..OFF_LEFT + 4].copy_from_slice(&e.left.to_ne_bytes());
        out[OFF_SEEDED..OFF_SEEDED + 4].copy_from_slice(&i32::from(e.seeded).to_ne_bytes());
        out[OFF_NEXT..OFF_NEXT + 8].copy_from_slice(&u64::from(e.next).to_ne_bytes());
        for (i, w) in e.state.iter().enumerate() {
            out[OFF_STATE + 8 * i..OFF_STATE + 8 * i + 8].copy_from_slice(&u64::from(*w).to_ne_bytes());
        }
        if let Some(y) = self.next_double_normal {
            out[OFF_NORMAL_Y..OFF_NORMAL_Y + 8].copy_from_slice(&y.to_ne_bytes());
            out[OFF_NORMAL_VALID..OFF_NORMAL_VALID + 4].copy_from_slice(&1i32.to_ne_bytes());
        }
        if let Some(x) = self.next_float_normal {
            out[OFF_FLOAT_NORMAL..OFF_FLOAT_NORMAL + 4].copy_from_slice(&x.to_ne_bytes());
            out[OFF_FLOAT_VALID] = 1;
        }
        out
    }

    /// Restores a state of `torch.get_rng_state()`'s layout, with CPU's checks and messages.
    pub fn set_state(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() != STATE_BYTES {
            return Err(Error::runtime(format!(
                "Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG state size to be {}",
                bytes.len()
            )));
        }
        let u64_at = |o: usize| u64::from_ne_bytes(bytes[o..o + 8].try_into().unwrap_or([0; 8]));
        let i32_at = |o: usize| i32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap_or([0; 4]));
        let mut state = [0u32; N];
        for (i, w) in state.iter_mut().enumerate() {
            *w = u64_at(OFF_STATE + 8 * i) as u32;
        }
        let engine = Mt19937 {
            seed: u64_at(0),
            left: i32_at(OFF_LEFT),
            seeded: i32_at(OFF_SEEDED) != 0,
            next: u64_at(OFF_NEXT) as u32,
            state,
        };
        if !engine.is_valid() {
            return Err(Error::runtime("Invalid mt19937 state"));
        }
        let float_bytes = bytes[OFF_FLOAT_NORMAL..OFF_FLOAT_NORMAL + 4].try_into().unwrap_or([0; 4]);
        self.engine = engine;
        self.next_float_normal = (bytes[OFF_FLOAT_VALID] != 0).then(|| f32::from_ne_bytes(float_bytes));
        self.next_double_normal = (i32_at(OFF_NORMAL_VALID) != 0).then(|| f64::from_bits(u64_at(OFF_NORMAL_Y)));
        Ok(())
    }
}

/// A generator's state behind the lock kernels hold while they draw.
#[derive(Debug)]
pub struct Engine(Mutex<CpuGenerator>);

impl Engine {
    pub fn new(seed: u64) -> Self {
        Engine(Mutex::new(CpuGenerator::new(seed)))
    }

    /// Runs `f` with the generator locked (a lock poisoned by a panicking kernel is taken over:
    /// the state is still a valid engine).
    pub fn with<R>(&self, f: impl FnOnce(&mut CpuGenerator) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A seed from the operating system, 53 bits as `c10::detail::getNonDeterministicRandom` keeps
/// (so it survives a round trip through a Python float).
pub fn nondeterministic_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 8];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    let raw = if from_os.is_ok() {
        u64::from_ne_bytes(bytes)
    } else {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        h.finish()
    };
    raw & 0x1f_ffff_ffff_ffff
}

/// Each device's default generator (`torch.manual_seed` seeds them), seeded nondeterministically
/// at first use as CPU's default generator is.
static DEFAULTS: [OnceLock<Engine>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];

/// The default generator of `device` (one past [`MAX_DEVICES`] is refused by the callers, which
/// check indices against the device count first).
pub fn default_engine_of(device: usize) -> &'static Engine {
    DEFAULTS[device.min(MAX_DEVICES - 1)].get_or_init(|| Engine::new(nondeterministic_seed()))
}

/// The current device's default generator (that of the device a kernel's call is on: the
/// generated wrappers make it current).
pub fn default_engine() -> &'static Engine {
    default_engine_of(crate::device::current())
}

/// Runs `f` on the generator a kernel was given (`generator=`), or on the current device's
/// default generator, locked for the whole call. A generator of another device is CPU's error.
pub fn with_generator<R>(generator: Option<Generator>, f: impl FnOnce(&mut CpuGenerator) -> R) -> Result<R> {
    let Some(generator) = generator else { return Ok(default_engine().with(f)) };
    let engine = generator_engine(generator)?;
    // SAFETY: the glue returns the engine its generator owns (or the default engine); the
    // generator is an argument of the running kernel, alive until it returns.
    Ok(unsafe { &*engine }.with(f))
}

fn engine_ref<'a>(engine: *mut c_void) -> Option<&'a Engine> {
    // SAFETY: the glue passes what `regen_runtime_rng_new`/`_clone`/`_default` returned, or NULL.
    unsafe { engine.cast::<Engine>().as_ref() }
}

/// A new engine seeded with `seed` (owned by the caller: `regen_runtime_rng_free`).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_new(seed: u64) -> *mut c_void {
    Box::into_raw(Box::new(Engine::new(seed))).cast()
}

/// The default engine of `device` (never freed); NULL for a device index out of range.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_default(device: i32) -> *mut c_void {
    match usize::try_from(device) {
        Ok(d) if d < crate::device::count() => std::ptr::from_ref(default_engine_of(d)).cast_mut().cast(),
        _ => std::ptr::null_mut(),
    }
}

/// Whether `engine` is one of the default engines.
fn is_default(engine: *mut c_void) -> bool {
    DEFAULTS.iter().any(|d| d.get().is_some_and(|e| std::ptr::eq(e, engine.cast::<Engine>())))
}

/// A new engine in the same state.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_clone(engine: *mut c_void) -> *mut c_void {
    match engine_ref(engine) {
        Some(e) => Box::into_raw(Box::new(Engine(Mutex::new(e.with(|g| g.clone()))))).cast(),
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// `engine` came from `regen_runtime_rng_new` or `_clone` and is freed once (NULL and the
/// default engines are ignored).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_rng_free(engine: *mut c_void) {
    if !engine.is_null() && !is_default(engine) {
        // SAFETY: per the contract.
        drop(unsafe { Box::from_raw(engine.cast::<Engine>()) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_set_seed(engine: *mut c_void, seed: u64) {
    if let Some(e) = engine_ref(engine) {
        e.with(|g| g.set_seed(seed));
    }
}

/// Seeds `engine` nondeterministically; returns the seed.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_reseed(engine: *mut c_void) -> u64 {
    let seed = nondeterministic_seed();
    regen_runtime_rng_set_seed(engine, seed);
    seed
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_current_seed(engine: *mut c_void) -> u64 {
    engine_ref(engine).map_or(0, |e| e.with(|g| g.current_seed()))
}

/// Bytes of a state (`torch.get_rng_state()`'s size).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_rng_state_size() -> usize {
    STATE_BYTES
}

/// # Safety
/// `out` has `len` writable bytes; fewer than [`STATE_BYTES`] writes nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_rng_get_state(engine: *mut c_void, out: *mut u8, len: usize) {
    let Some(e) = engine_ref(engine) else { return };
    if out.is_null() || len < STATE_BYTES {
        return;
    }
    let state = e.with(|g| g.get_state());
    // SAFETY: per the contract.
    unsafe { std::ptr::copy_nonoverlapping(state.as_ptr(), out, STATE_BYTES) };
}

/// Restores a state; returns NULL or CPU's message (valid until the next call on this thread).
///
/// # Safety
/// `bytes` has `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_rng_set_state(
    engine: *mut c_void,
    bytes: *const u8,
    len: usize,
) -> *const c_char {
    let Some(e) = engine_ref(engine) else { return std::ptr::null() };
    let bytes = if bytes.is_null() {
        &[][..]
    } else {
        // SAFETY: per the contract.
        unsafe { std::slice::from_raw_parts(bytes, len) }
    };
    crate::c_status(e.with(|g| g.set_state(bytes)))
}

/// The engine of a generator passed to a kernel; CPU's error when it belongs to
/// another device.
fn generator_engine(generator: Generator) -> Result<*mut Engine> {
    let host = installed()?;
    let mut engine = std::ptr::null_mut();
    // SAFETY: `generator` is a live `at::GeneratorImpl` (a kernel argument); `engine` is writable.
    status(unsafe { (host.generator_engine)(generator.0.as_ptr(), &mut engine) })?;
    if engine.is_null() {
        return Err(Error::runtime("a generator without an engine"));
    }
    Ok(engine.cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_reference_sequence() {
        // The reference mt19937 (init_genrand(5489)): 10000th output is 4123659995.
        let mut mt = Mt19937::new(5489);
        assert_eq!(mt.next_u32(), 3_499_211_612);
        let last = (1..10_000).map(|_| mt.next_u32()).last();
        assert_eq!(last, Some(4_123_659_995));
    }

    #[test]
    fn seed_keeps_low_32_bits_for_the_engine() {
        let mut a = CpuGenerator::new(7);
        let mut b = CpuGenerator::new(7 + (1 << 32));
        assert_eq!(a.random(), b.random());
        assert_eq!(b.current_seed(), 7 + (1 << 32));
    }

    #[test]
    fn state_round_trip_mid_stream_with_caches() {
        let mut g = CpuGenerator::new(42);
        for _ in 0..700 {
            g.random();
        }
        g.normal_f64(0.0, 1.0);
        g.next_float_normal = Some(0.25);
        let bytes = g.get_state();
        assert_eq!(bytes.len(), STATE_BYTES);
        let mut h = CpuGenerator::new(1);
        h.set_state(&bytes).unwrap();
        assert_eq!(h.next_double_normal, g.next_double_normal);
        assert_eq!(h.next_float_normal, Some(0.25));
        assert_eq!(
            (0..1000).map(|_| h.random()).collect::<Vec<_>>(),
            (0..1000).map(|_| g.random()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_states_are_cpus_errors() {
        let mut g = CpuGenerator::new(1);
        let err = g.set_state(&[0u8; 10]).unwrap_err();
        assert!(err.message().contains("of size 5056 but found the input RNG state size to be 10"), "{err}");
        let mut bytes = g.get_state();
        bytes[OFF_LEFT..OFF_LEFT + 4].copy_from_slice(&0i32.to_ne_bytes());
        assert_eq!(g.set_state(&bytes).unwrap_err().message(), "Invalid mt19937 state");
    }

    #[test]
    fn engines_through_the_c_functions() {
        let e = regen_runtime_rng_new(3);
        assert_eq!(regen_runtime_rng_current_seed(e), 3);
        let c = regen_runtime_rng_clone(e);
        let draw = |p: *mut c_void| engine_ref(p).map(|x| x.with(|g| g.random()));
        assert_eq!(draw(e), draw(c));
        let mut state = vec![0u8; STATE_BYTES];
        // SAFETY: the buffer has STATE_BYTES bytes; the engines are live and freed once.
        unsafe {
            regen_runtime_rng_get_state(e, state.as_mut_ptr(), state.len());
            regen_runtime_rng_set_seed(c, 9);
            assert!(regen_runtime_rng_set_state(c, state.as_ptr(), state.len()).is_null());
            assert_eq!(draw(e), draw(c));
            assert!(!regen_runtime_rng_set_state(c, state.as_ptr(), 3).is_null());
            regen_runtime_rng_free(c);
            regen_runtime_rng_free(e);
            regen_runtime_rng_free(regen_runtime_rng_default(0));
        }
    }
}
