//! Convolution as unfold + GEMM: `convolution_overrideable` (where PyTorch routes every
//! convolution on a PrivateUse1 device: 1-d to 3-d, strided, padded, dilated, grouped,
//! transposed) and its backward, and the unfold/fold ops `im2col` and `col2im`.
//!
//! Every product is one of two shapes over a sliding-window [`Geometry`] that maps a position of
//! the column side and a kernel offset to a position of the image side (`c·stride − pad + k·dil`):
//! - unfold, then multiply: the forward convolution, the gradient of a transposed convolution's
//!   input, and (multiplied by the columns transposed, summed over the samples) both weight
//!   gradients;
//! - multiply, then fold: the transposed convolution and the gradient of a convolution's input.
//!
//! The samples go in chunks whose columns fit `COLS_BUDGET`; the unfold and fold split planes
//! over PyTorch's threads and each chunk's product is one batched GEMM of
//! `matmul::raw_product` (split over the same threads), or, for windows of few output positions
//! (`FOLD_MAX_LEN`), one GEMM over the chunk's samples side by side (`Layout::Folded`). A 1×1 window of stride 1 without
//! padding needs no columns: the image is its own column matrix. float16 and bfloat16 compute
//! in float32 and round once, as ATen's opmath does; integers wrap, as CPU's slow kernels do.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Tensor, TensorRef, host};

use crate::engine::dtype::{DType, not_implemented};
use crate::ops::copy;
use crate::ops::matmul::{self, Raw};

/// The most bytes of unfolded columns held at once (a chunk holds at least one sample).
const COLS_BUDGET: usize = 32 << 20;
/// The fewest elements worth a thread of their own in the unfold and fold (ATen's GRAIN).
const GRAIN: usize = 32768;

/// The sliding window between an image and its columns, padded to three spatial dimensions
/// (leading ones of size 1): column position `c` and kernel offset `k` read image position
/// `c·stride − pad + k·dil`, when that lies inside the image (zero padding otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub img: [usize; 3],
    pub cols: [usize; 3],
    pub k: [usize; 3],
    pub stride: [usize; 3],
    pub pad: [usize; 3],
    pub dil: [usize; 3],
}

impl Geometry {
    fn kvol(&self) -> usize {
        self.k.iter().product()
    }
    fn len(&self) -> usize {
        self.cols.iter().product()
    }
    /// The columns are the image itself.
    fn identity(&self) -> bool {
        self.k == [1; 3] && self.stride == [1; 3] && self.pad == [0; 3] && self.img == self.cols
    }
    /// The positions `lo..hi` of the column side along dimension `d` that kernel offset `k`
    /// maps inside the image, and the image position of column 0 (`off`).
    fn range(&self, d: usize, k: usize) -> (usize, usize, isize) {
        let off = (k * self.dil[d]) as isize - self.pad[d] as isize;
        let st = self.stride[d] as isize;
        let lo = if off >= 0 { 0 } else { (-off + st - 1) / st };
        let room = self.img[d] as isize - off;
        let hi = if room <= 0 { 0 } else { (room + st - 1) / st };
        let hi = (hi as usize).min(self.cols[d]);
        ((lo as usize).min(hi), hi, off)
    }
}

/// A tensor as a pointer and `[N, C, D, H, W]` sizes and element strides (missing spatial
/// dimensions of size 1 in front).
#[derive(Clone, Copy, Debug)]
struct View {
    ptr: *mut u8,
    size: [usize; 5],
    st: [isize; 5],
    esize: usize,
}

// SAFETY: a view describes a tensor kept alive by the kernel call; threads touch disjoint planes
// of outputs.
unsafe impl Sync for View {}
// SAFETY: a View carries only a pointer and geometry; the tensor it describes outlives every
// thread of the kernel call it is sent to.
unsafe impl Send for View {}

impl View {
    /// `t`, batched (`batched == false` adds a leading sample dimension of 1).
    fn of(t: &TensorRef<'_>, batched: bool) -> Result<View> {
        let dtype = DType::from_scalar_type(t.dtype())?;
        let (mut size, mut st) = ([1usize; 5], [0isize; 5]);
        let lead = usize::from(!batched);
        let dims = t.dim();
        let spatial = (dims + lead).saturating_sub(2);
        for (i, (&s, &x)) in t.sizes().iter().zip(t.strides()).enumerate() {
            let j = i + lead;
            let slot = if j < 2 { j } else { 5 - spatial + (j - 2) };
            size[slot] = s as usize;
            st[slot] = x as isize;
        }
        Ok(View { ptr: t.data_ptr().cast(), size, st, esize: dtype.size() })
    }
    fn at(&self, idx: [usize; 5]) -> *mut u8 {
        let off: isize = (0..5).map(|d| idx[d] as isize * self.st[d]).sum();
        self.ptr.wrapping_offset(off * self.esize as isize)
    }
    /// The stride of dimensions `from..5` flattened into one, if they are one.
    fn merged(&self, from: usize) -> Option<isize> {
        let mut stride = None;
        let mut expected = 0;
        for d in (from..5).rev() {
            if self.size[d] == 1 {
                continue;
            }
            match stride {
                None => {
                    stride = Some(self.st[d]);
                    expected = self.st[d] * self.size[d] as isize;
                }
                Some(_) if self.st[d] == expected => expected *= self.size[d] as isize,
                Some(_) => return None,
            }
        }
        Some(stride.unwrap_or(1))
    }
}

/// A half-precision sum in f32, rounded once, through the kernels' own conversions (which
/// vectorise; `half`'s are a call per element).
#[inline(always)]
fn half_add<T: crate::engine::dtype::Element<Acc = f32>>(a: T, b: T) -> T {
    T::from_acc(a.to_acc() + b.to_acc())
}

/// An element the unfold copies and the fold sums (in the dtype, as ATen's `col2im`).
trait Cell: Copy + Send + Sync + 'static {
    fn zero() -> Self;
    fn add(self, o: Self) -> Self;
}

macro_rules! cells {
    ($($t:ty: $zero:expr, |$a:ident, $b:ident| $add:expr;)*) => {$(
        impl Cell for $t {
            #[inline(always)]
            fn zero() -> Self {
                $zero
            }
            #[inline(always)]
            fn add(self, $b: Self) -> Self {
                let $a = self;
                $add
            }
        }
    )*};
}
cells! {
    f32: 0.0, |a, b| a + b;
    f64: 0.0, |a, b| a + b;
    num_complex::Complex32: num_complex::Complex32::new(0.0, 0.0), |a, b| a + b;
    num_complex::Complex64: num_complex::Complex64::new(0.0, 0.0), |a, b| a + b;
    half::f16: half::f16::ZERO, |a, b| half_add(a, b);
    half::bf16: half::bf16::ZERO, |a, b| half_add(a, b);
    bool: false, |a, b| a || b;
    u8: 0, |a, b| a.wrapping_add(b);
    i8: 0, |a, b| a.wrapping_add(b);
    i16: 0, |a, b| a.wrapping_add(b);
    i32: 0, |a, b| a.wrapping_add(b);
    i64: 0, |a, b| a.wrapping_add(b);
}

/// Runs `$body` with `$T` the Rust type of a dtype the unfold and fold handle.
macro_rules! cell_dispatch {
    ($dtype:expr, |$T:ident| $body:expr, else $else:expr) => {
        crate::dispatch!($dtype, [F32, F64, C64, C128, F16, BF16, Bool, U8, I8, I16, I32, I64], |$T| $body, else $else)
    };
}

/// Copies `n` elements from `src` to `dst` in fixed-size pieces the compiler keeps inline. A
/// window's rows are a few to a few tens of elements (8 for ResNet-18's 8×8 layers), where a
/// call into libc costs more than the copy: the unfold's calls to `memmove` and `memset` took
/// 13% of a 128-channel 8×8 convolution at 1 thread, nearly as long as the unfold's own loop.
///
/// # Safety
/// `src` is readable and `dst` writable for `n` elements; they do not overlap.
#[inline(always)]
unsafe fn copy_run<T: Copy>(mut src: *const T, mut dst: *mut T, n: usize) {
    // SAFETY: every piece lies inside the `n` elements of the contract.
    unsafe {
        let mut left = n;
        while left >= 8 {
            std::ptr::copy_nonoverlapping(src, dst, 8);
            (src, dst, left) = (src.add(8), dst.add(8), left - 8);
        }
        for piece in [4, 2, 1] {
            if left & piece != 0 {
                std::ptr::copy_nonoverlapping(src, dst, piece);
                (src, dst) = (src.add(piece), dst.add(piece));
            }
        }
    }
}

/// Writes `n` zeros at `dst`, inline as [`copy_run`].
///
/// # Safety
/// `dst` is writable for `n` elements.
#[inline(always)]
unsafe fn zero_run<T: Cell>(mut dst: *mut T, n: usize) {
    // SAFETY: every piece lies inside the `n` elements of the contract.
    unsafe {
        let mut left = n;
        while left >= 8 {
            dst.cast::<[T; 8]>().write_unaligned([T::zero(); 8]);
            (dst, left) = (dst.add(8), left - 8);
        }
        for piece in [4, 2, 1] {
            if left & piece != 0 {
                for i in 0..piece {
                    dst.add(i).write(T::zero());
                }
                dst = dst.add(piece);
            }
        }
    }
}

/// Unfolds channel `c` of sample `n` of `img` into its `kvol` rows of `len` columns at `dst`,
/// `rs` elements apart.
///
/// `pad` is scratch for [`unfold_plane_padded`].
///
/// # Safety
/// `img` holds `(n, c)` and the window's image; `dst` has `kvol` rows of `len` elements at `rs`.
unsafe fn unfold_plane<T: Cell>(
    img: &View,
    n: usize,
    c: usize,
    g: &Geometry,
    dst: *mut T,
    rs: usize,
    pad: &mut Vec<T>,
) {
    if pads(g) {
        // SAFETY: forwarded contract.
        unsafe { unfold_plane_padded(img, n, c, g, dst, rs, pad) };
    } else {
        // SAFETY: forwarded contract.
        unsafe { unfold_plane_general(img, n, c, g, dst, rs) };
    }
}

/// Plane `(n, c)` of an image and the zero-padded copy of it in a scratch `Vec` that the padded
/// unfold reads and the padded fold writes: `h + 2·ph` rows of `wp = w + 2·pw` elements, the
/// image at row `ph`, column `pw`. Every position a window that [`pads`] reaches lies inside: the
/// last column reads `(cols − 1)·stride + (k − 1)·dil − pad ≤ img + pad − 1` along each dimension.
struct PaddedPlane<T> {
    at: *mut T,
    sh: isize,
    sw: isize,
    h: usize,
    w: usize,
    ph: usize,
    pw: usize,
    wp: usize,
}

impl<T: Cell> PaddedPlane<T> {
    /// The plane, with `pad` resized to its padded copy and every element set to `fill`.
    fn of(img: &View, n: usize, c: usize, g: &Geometry, pad: &mut Vec<T>, fill: T) -> Self {
        let [_, _, _, sh, sw] = img.st;
        let (h, w, ph, pw) = (g.img[1], g.img[2], g.pad[1], g.pad[2]);
        let wp = w + 2 * pw;
        pad.clear();
        pad.resize((h + 2 * ph) * wp, fill);
        Self { at: img.at([n, c, 0, 0, 0]).cast::<T>(), sh, sw, h, w, ph, pw, wp }
    }

    /// Copies the image into the inside of the padded copy at `base` (`inward`), or back.
    ///
    /// # Safety
    /// The plane is live (written when not `inward`); `base` is the padded copy.
    unsafe fn exchange(&self, base: *mut T, inward: bool) {
        // SAFETY: the rows lie inside the plane and the padded copy, per the contract.
        unsafe {
            for y in 0..self.h {
                let (line, row) = (self.at.offset(y as isize * self.sh), base.add((y + self.ph) * self.wp + self.pw));
                match (self.sw == 1, inward) {
                    (true, true) => copy_run(line, row, self.w),
                    (true, false) => copy_run(row, line, self.w),
                    (false, true) => (0..self.w).for_each(|x| *row.add(x) = *line.offset(x as isize * self.sw)),
                    (false, false) => (0..self.w).for_each(|x| *line.offset(x as isize * self.sw) = *row.add(x)),
                }
            }
        }
    }
}

/// [`unfold_plane`] of a 2-d window of column stride 1 (every stride-1 convolution, and the
/// rows of strided ones): the plane copied once into `pad` with its zero padding around it, so
/// that each row of the columns is `cols[1]` runs of `cols[2]` elements of `pad`, with no
/// bounds to test. The general loop's per-run bookkeeping cost more than its copies: with
/// inline copies it still took 29% of a 128-channel 8×8 convolution at 1 thread (0.75 ns per
/// element of the columns); padded, the unfold takes 16%.
///
/// # Safety
/// As [`unfold_plane`]; the window is 2-d (`img[0] == k[0] == 1`) with `stride[2] == 1`.
unsafe fn unfold_plane_padded<T: Cell>(
    img: &View,
    n: usize,
    c: usize,
    g: &Geometry,
    dst: *mut T,
    rs: usize,
    pad: &mut Vec<T>,
) {
    let p = PaddedPlane::of(img, n, c, g, pad, T::zero());
    // SAFETY: the plane is inside `img` per the contract.
    unsafe { p.exchange(pad.as_mut_ptr(), true) };
    let (base, wp) = (pad.as_ptr(), p.wp);
    let [_, ch, cw] = g.cols;
    let mut row = dst;
    for kh in 0..g.k[1] {
        for kw in 0..g.k[2] {
            // SAFETY: the runs read inside `pad` (see `PaddedPlane`) and write this row of `ch × cw`.
            unsafe {
                let from = base.add(kh * g.dil[1] * wp + kw * g.dil[2]);
                for y in 0..ch {
                    copy_run(from.add(y * g.stride[1] * wp), row.add(y * cw), cw);
                }
            }
            row = row.wrapping_add(rs);
        }
    }
}

/// [`unfold_plane`] of any window, bounds tested per run.
///
/// # Safety
/// As [`unfold_plane`].
unsafe fn unfold_plane_general<T: Cell>(img: &View, n: usize, c: usize, g: &Geometry, dst: *mut T, rs: usize) {
    let src = img.at([n, c, 0, 0, 0]).cast::<T>();
    let [_, _, sd, sh, sw] = img.st;
    let [cd, ch, cw] = g.cols;
    let mut row = dst;
    for kd in 0..g.k[0] {
        let (d0, d1, od) = g.range(0, kd);
        for kh in 0..g.k[1] {
            let (h0, h1, oh) = g.range(1, kh);
            for kw in 0..g.k[2] {
                let (w0, w1, ow) = g.range(2, kw);
                // SAFETY: every write lies in this row of `kvol × len`, every read inside the
                // image (the ranges keep positions in bounds).
                unsafe {
                    for z in 0..cd {
                        for y in 0..ch {
                            let out = row.add((z * ch + y) * cw);
                            if !(d0..d1).contains(&z) || !(h0..h1).contains(&y) {
                                zero_run(out, cw);
                                continue;
                            }
                            let iz = (z * g.stride[0]) as isize + od;
                            let iy = (y * g.stride[1]) as isize + oh;
                            let line = src.offset(iz * sd + iy * sh);
                            zero_run(out, w0);
                            let step = g.stride[2] as isize * sw;
                            let mut p = line.offset((w0 * g.stride[2]) as isize * sw + ow * sw);
                            if step == 1 {
                                copy_run(p, out.add(w0), w1 - w0);
                            } else {
                                for x in w0..w1 {
                                    *out.add(x) = *p;
                                    p = p.offset(step);
                                }
                            }
                            zero_run(out.add(w1), cw - w1);
                        }
                    }
                    row = row.wrapping_add(rs);
                }
            }
        }
    }
}

/// Whether [`unfold_plane_padded`] and [`fold_plane_padded`] take the window: 2-d (one image
/// slice, kernel offset and column position along the first dimension, reading that slice: a
/// 3-d window over one slice padded in depth has several positions, or, strided, one that reads
/// only padding), column stride 1, and every position it reaches inside the padded image.
fn pads(g: &Geometry) -> bool {
    let inside = |d: usize| (g.cols[d] - 1) * g.stride[d] + (g.k[d] - 1) * g.dil[d] < g.img[d] + 2 * g.pad[d];
    let flat = g.img[0] == 1 && g.k[0] == 1 && g.cols[0] == 1 && g.pad[0] == 0;
    flat && g.stride[2] == 1 && g.len() * g.kvol() > 0 && inside(1) && inside(2)
}

/// Folds the `kvol` rows of `len` columns at `src`, `rs` elements apart, into channel `c` of
/// sample `n` of `img`, which starts from `init` (the sums in the order of ATen's `col2im`:
/// kernel offsets outer). `pad` is scratch for [`fold_plane_padded`].
///
/// # Safety
/// As [`unfold_plane`], with `img` written.
#[allow(clippy::too_many_arguments)]
unsafe fn fold_plane<T: Cell>(
    img: &View,
    n: usize,
    c: usize,
    g: &Geometry,
    src: *const T,
    rs: usize,
    init: T,
    pad: &mut Vec<T>,
) {
    if pads(g) {
        // SAFETY: forwarded contract.
        unsafe { fold_plane_padded(img, n, c, g, src, rs, init, pad) };
    } else {
        // SAFETY: forwarded contract.
        unsafe { fold_plane_general(img, n, c, g, src, rs, init) };
    }
}

/// [`fold_plane`] through a padded plane, the adjoint of [`unfold_plane_padded`]: the sums land
/// in `pad` (filled with `init`, so each element's sum keeps the general order; what lands on
/// the border is padding's and dropped) with no bounds to test, and the inside is copied to the
/// image after.
///
/// # Safety
/// As [`fold_plane`], with [`pads`] true.
#[allow(clippy::too_many_arguments)]
unsafe fn fold_plane_padded<T: Cell>(
    img: &View,
    n: usize,
    c: usize,
    g: &Geometry,
    src: *const T,
    rs: usize,
    init: T,
    pad: &mut Vec<T>,
) {
    let p = PaddedPlane::of(img, n, c, g, pad, init);
    let (base, wp) = (pad.as_mut_ptr(), p.wp);
    let [_, ch, cw] = g.cols;
    // SAFETY: the writes lie inside `pad` (see `PaddedPlane`), the reads inside the `kvol` rows
    // of `src`, and the last copy inside the image plane.
    unsafe {
        let mut from = src;
        for kh in 0..g.k[1] {
            for kw in 0..g.k[2] {
                let to = base.add(kh * g.dil[1] * wp + kw * g.dil[2]);
                for y in 0..ch {
                    let (a, b) = (to.add(y * g.stride[1] * wp), from.add(y * cw));
                    for x in 0..cw {
                        *a.add(x) = (*a.add(x)).add(*b.add(x));
                    }
                }
                from = from.add(rs);
            }
        }
        p.exchange(base, false);
    }
}

/// [`fold_plane`] of any window, bounds tested per run.
///
/// # Safety
/// As [`fold_plane`].
unsafe fn fold_plane_general<T: Cell>(img: &View, n: usize, c: usize, g: &Geometry, src: *const T, rs: usize, init: T) {
    let dst = img.at([n, c, 0, 0, 0]).cast::<T>();
    let [_, _, sd, sh, sw] = img.st;
    // SAFETY: the plane lies inside `img`; the reads inside `src` and writes inside the image
    // as in `unfold_plane`.
    unsafe {
        for z in 0..g.img[0] {
            for y in 0..g.img[1] {
                for x in 0..g.img[2] {
                    *dst.offset(z as isize * sd + y as isize * sh + x as isize * sw) = init;
                }
            }
        }
        let [_, ch, cw] = g.cols;
        let mut row = src;
        for kd in 0..g.k[0] {
            let (d0, d1, od) = g.range(0, kd);
            for kh in 0..g.k[1] {
                let (h0, h1, oh) = g.range(1, kh);
                for kw in 0..g.k[2] {
                    let (w0, w1, ow) = g.range(2, kw);
                    for z in d0..d1 {
                        for y in h0..h1 {
                            let cols = row.add((z * ch + y) * cw);
                            let iz = (z * g.stride[0]) as isize + od;
                            let iy = (y * g.stride[1]) as isize + oh;
                            let line = dst.offset(iz * sd + iy * sh);
                            for x in w0..w1 {
                                let p = line.offset(((x * g.stride[2]) as isize + ow) * sw);
                                *p = (*p).add(*cols.add(x));
                            }
                        }
                    }
                    row = row.wrapping_add(rs);
                }
            }
        }
    }
}

/// How the columns of a chunk of samples lie in their buffer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    /// `[samples, C·kvol, len]`: one column matrix per sample (a batch of products).
    PerSample,
    /// `[C·kvol, samples, len]`: one column matrix `C·kvol × samples·len` for the whole chunk,
    /// so that the chunk's products are one product whose weight is packed and read once (per
    /// sample, a late layer's 2×2 image made each product a skinny one that streamed the whole
    /// weight for 4 columns).
    Folded,
}

impl Layout {
    /// Where plane `(i / channels, i % channels)` of a chunk of `samples` starts, in elements,
    /// and its rows' stride.
    fn plane(self, i: usize, channels: usize, samples: usize, g: &Geometry) -> (usize, usize) {
        let (kv, len) = (g.kvol(), g.len());
        match self {
            Layout::PerSample => (i * kv * len, len),
            Layout::Folded => {
                let (n, c) = (i / channels, i % channels);
                ((c * kv * samples + n) * len, samples * len)
            }
        }
    }
}

/// Unfolds samples `n0..n1` of `img` (all its channels) into `buf`, laid out as `layout`.
///
/// # Safety
/// `img` holds the samples and the window's image; `buf` is large enough.
unsafe fn unfold(
    dtype: DType,
    img: &View,
    g: &Geometry,
    n0: usize,
    n1: usize,
    buf: *mut u8,
    layout: Layout,
) -> Result<()> {
    let channels = img.size[1];
    let plane = g.kvol() * g.len();
    let buf = Addr(buf);
    cell_dispatch!(dtype, |T| {
        host::parallel_for((n1 - n0) * channels, GRAIN.div_ceil(plane.max(1)), |i0, i1| {
            let mut pad = Vec::new();
            for i in i0..i1 {
                let (n, c) = (n0 + i / channels, i % channels);
                let (at, rs) = layout.plane(i, channels, n1 - n0, g);
                // SAFETY: per the contract; item `i` owns plane `i` of `buf`.
                unsafe { unfold_plane::<T>(img, n, c, g, buf.get().cast::<T>().add(at), rs, &mut pad) };
            }
        });
        Ok(())
    }, else Err(not_implemented("im2col_out_cpu", dtype)))
}

/// Folds `buf` (laid out as `layout`) into samples `n0..n1` of `img`, each plane starting from
/// `init[c]` (zero without it).
///
/// # Safety
/// As [`unfold`], with `img` written; `init` has one element of `dtype` per channel.
#[allow(clippy::too_many_arguments)]
unsafe fn fold(
    dtype: DType,
    buf: *const u8,
    g: &Geometry,
    n0: usize,
    n1: usize,
    img: &View,
    init: Option<*const u8>,
    layout: Layout,
) -> Result<()> {
    let channels = img.size[1];
    let plane = g.kvol() * g.len();
    let (buf, init) = (Addr(buf.cast_mut()), init.map(|p| Addr(p.cast_mut())));
    cell_dispatch!(dtype, |T| {
        host::parallel_for((n1 - n0) * channels, GRAIN.div_ceil(plane.max(1)), |i0, i1| {
            let mut pad = Vec::new();
            for i in i0..i1 {
                let (n, c) = (n0 + i / channels, i % channels);
                let (at, rs) = layout.plane(i, channels, n1 - n0, g);
                // SAFETY: per the contract; item `i` reads plane `i` of `buf` and writes its own
                // image plane.
                unsafe {
                    let start = init.map_or(T::zero(), |p| *p.get().cast::<T>().add(c));
                    fold_plane::<T>(img, n, c, g, buf.get().cast::<T>().add(at), rs, start, &mut pad);
                }
            }
        });
        Ok(())
    }, else Err(not_implemented("col2im_out_cpu", dtype)))
}

/// Samples `n0..n1` of `v` (dense along its spatial dimensions) copied channel-major into `dst`:
/// `[C, n1 - n0, len]`, a matrix `C × (n1 - n0)·len` (the folded products' operand).
///
/// # Safety
/// `v` holds the samples; `dst` has room for them.
unsafe fn gather(dtype: DType, v: &View, n0: usize, n1: usize, dst: *mut u8) -> Result<()> {
    let sl = v.merged(2).unwrap_or(1);
    let (channels, samples, len) = (v.size[1], n1 - n0, v.size[2..].iter().product::<usize>());
    let dst = Addr(dst);
    cell_dispatch!(dtype, |T| {
        host::parallel_for(samples * channels, GRAIN.div_ceil(len.max(1)), |i0, i1| {
            for i in i0..i1 {
                let (n, c) = (i / channels, i % channels);
                // SAFETY: per the contract; item `i` writes its own row of `dst`.
                unsafe {
                    let src = v.at([n0 + n, c, 0, 0, 0]).cast::<T>();
                    let out = dst.get().cast::<T>().add((c * samples + n) * len);
                    for l in 0..len {
                        *out.add(l) = *src.offset(l as isize * sl);
                    }
                }
            }
        });
        Ok(())
    }, else Err(not_implemented("im2col_out_cpu", dtype)))
}

/// The inverse of [`gather`]: `src` (`[C, n1 - n0, len]`) written into samples `n0..n1` of `v`,
/// or added to them with `accumulate`.
///
/// # Safety
/// As [`gather`], with `v` written.
unsafe fn scatter(dtype: DType, src: *const u8, v: &View, n0: usize, n1: usize, accumulate: bool) -> Result<()> {
    let sl = v.merged(2).unwrap_or(1);
    let (channels, samples, len) = (v.size[1], n1 - n0, v.size[2..].iter().product::<usize>());
    let src = Addr(src.cast_mut());
    cell_dispatch!(dtype, |T| {
        host::parallel_for(samples * channels, GRAIN.div_ceil(len.max(1)), |i0, i1| {
            for i in i0..i1 {
                let (n, c) = (i / channels, i % channels);
                // SAFETY: per the contract; item `i` writes its own plane of `v`.
                unsafe {
                    let from = src.get().cast::<T>().add((c * samples + n) * len);
                    let out = v.at([n0 + n, c, 0, 0, 0]).cast::<T>();
                    for l in 0..len {
                        let p = out.offset(l as isize * sl);
                        *p = if accumulate { (*p).add(*from.add(l)) } else { *from.add(l) };
                    }
                }
            }
        });
        Ok(())
    }, else Err(not_implemented("col2im_out_cpu", dtype)))
}

/// A raw pointer shared by the threads of one parallel loop.
#[derive(Clone, Copy)]
struct Addr(*mut u8);
// SAFETY: the loops write disjoint parts of the memory behind it.
unsafe impl Sync for Addr {}
// SAFETY: the memory behind it outlives the parallel loop whose threads it is sent to.
unsafe impl Send for Addr {}
impl Addr {
    fn get(self) -> *mut u8 {
        self.0
    }
}

/// A weight as a matrix: dimension 0 its rows, the rest flattened its columns.
#[derive(Clone, Copy)]
struct Matrix {
    ptr: *mut u8,
    rs: isize,
    cs: isize,
    esize: usize,
}

// SAFETY: as for `View`: a weight kept alive by the kernel call, whose threads write disjoint
// outputs (never the weight).
unsafe impl Sync for Matrix {}
// SAFETY: a Matrix carries only a pointer and geometry; the weight outlives every thread of the
// kernel call it is sent to.
unsafe impl Send for Matrix {}

impl Matrix {
    fn row(&self, r: usize) -> *mut u8 {
        self.ptr.wrapping_offset(r as isize * self.rs * self.esize as isize)
    }
}

/// `t` ready for the engine in `dtype`: as it is when it has that dtype, no lazy bits and
/// `ok(view)`, else a contiguous copy (kept alive in `keep`).
fn operand(t: TensorRef<'_>, dtype: DType, ok: impl Fn(&View) -> bool, keep: &mut Vec<Tensor>) -> Result<View> {
    let v = View::of(&t, true)?;
    if DType::from_scalar_type(t.dtype())? == dtype && !t.is_conj() && !t.is_neg() && ok(&v) {
        return Ok(v);
    }
    let copy = copy::dense(t, dtype)?;
    let v = View::of(&copy.as_ref(), true)?;
    keep.push(copy);
    Ok(v)
}

/// A weight `[rows, ...]` as a matrix (a copy when its trailing dimensions are not one).
fn weight_matrix(t: TensorRef<'_>, dtype: DType, keep: &mut Vec<Tensor>) -> Result<Matrix> {
    let v = operand(t, dtype, |v| v.merged(1).is_some(), keep)?;
    Ok(Matrix { ptr: v.ptr, rs: v.st[0], cs: v.merged(1).unwrap_or(1), esize: v.esize })
}

/// How many samples fit the columns budget, at least one.
fn chunk(samples: usize, bytes_per_sample: usize) -> usize {
    (COLS_BUDGET / bytes_per_sample.max(1)).clamp(1, samples.max(1))
}

/// An uninitialised scratch buffer of `bytes` (as u64 words, so any element type is aligned).
/// Its users write every element before reading it (the unfold writes the padding's zeros, the
/// products overwrite), and zeroing tens of megabytes per call cost as much as a tenth of a
/// convolution's backward pass.
fn scratch(bytes: usize) -> Box<[std::mem::MaybeUninit<u64>]> {
    Box::new_uninit_slice(bytes.div_ceil(8))
}

/// Runs `chunk(n0, n1, columns)` over the samples. With at least as many samples as PyTorch has
/// threads, each thread takes whole samples with its own columns buffer (one sample's columns
/// stay in cache between the unfold and the product, and the nested unfold and GEMM run on the
/// thread); otherwise chunks of samples go one after the other, each step split over the
/// threads. `per_sample` is the columns' bytes of one sample (0: no columns).
fn over_samples(
    samples: usize,
    per_sample: usize,
    by_sample: bool,
    chunk_fn: impl Fn(usize, usize, *mut u8) -> Result<()> + Sync,
) -> Result<()> {
    if by_sample && samples > 1 && samples >= host::num_threads() {
        let failed = std::sync::Mutex::new(None);
        host::parallel_for(samples, 1, |s0, s1| {
            let mut buf = scratch(per_sample);
            for n in s0..s1 {
                if let Err(e) = chunk_fn(n, n + 1, buf.as_mut_ptr().cast()) {
                    failed.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                    return;
                }
            }
        });
        return failed.into_inner().unwrap_or_else(|e| e.into_inner()).map_or(Ok(()), Err);
    }
    let step = chunk(samples, per_sample);
    let mut buf = scratch(step * per_sample);
    let mut n0 = 0;
    while n0 < samples {
        let n1 = (n0 + step).min(samples);
        chunk_fn(n0, n1, buf.as_mut_ptr().cast())?;
        n0 = n1;
    }
    Ok(())
}

/// Unfold, then multiply: `out[n, g·m + i, ·] (+)= Σ_j w[g·m + i, j] · cols(img[n])[g·kc + j, ·]`
/// for each group `g`, `m` rows and `kc` column rows (`img` channels per group × kvol) per group.
/// With `weight_grad`, instead `w[g·m + i, j] += Σ_n lhs[n, g·m + i, ·] · cols[g·kc + j, ·]`
/// (`w` then the dense output and `out` the left operand).
///
/// # Safety
/// The views describe live tensors of `dtype` of consistent shapes.
#[allow(clippy::too_many_arguments)]
unsafe fn unfold_product(
    dtype: DType,
    img: &View,
    g: &Geometry,
    groups: usize,
    m: usize,
    w: Matrix,
    out: &View,
    accumulate: bool,
    weight_grad: bool,
    kernel: &str,
) -> Result<()> {
    let samples = img.size[0];
    let gc = img.size[1] / groups;
    let (kv, len) = (g.kvol(), g.len());
    let kc = gc * kv;
    let esize = dtype.size();
    let ident = g.identity().then(|| img.merged(2)).flatten();
    let Some(lhs_len) = out.merged(2) else {
        return Err(Error::runtime(format!("{kernel}: expected an output with dense spatial dimensions")));
    };
    if ident.is_none() && folds(len) {
        // SAFETY: forwarded contract.
        return unsafe { unfold_product_folded(dtype, img, g, groups, m, w, out, accumulate, weight_grad, kernel) };
    }
    let per_sample = if ident.is_some() { 0 } else { img.size[1] * kv * len * esize };
    // Weight gradients sum over the samples: they split rows of the product, not samples. They
    // accumulate into a column-major scratch (`m` contiguous rows per column), added into `w`
    // at the end: with a row-major destination the gemm crate computes the transpose and packs
    // (transposes) each sample's columns, `kc × len`, where a column-major one has it pack the
    // gradient, `m × len`, read the columns in place, and the sums stay the same products in the
    // same order.
    let by_sample = ident.is_none() && !weight_grad;
    let mut acc = if weight_grad { vec![0u64; (groups * m * kc * esize).div_ceil(8)] } else { Vec::new() };
    let acc_ptr = Addr(acc.as_mut_ptr().cast());
    over_samples(samples, per_sample, by_sample, |n0, n1, buf| {
        // The column matrix of sample n0 and its (batch, row, column) strides.
        let (cols, cs) = match ident {
            Some(sl) => (img.at([n0, 0, 0, 0, 0]), [img.st[0], img.st[1], sl]),
            None => {
                // SAFETY: per the contract; `buf` holds the columns of samples n0..n1.
                unsafe { unfold(dtype, img, g, n0, n1, buf, Layout::PerSample)? };
                (buf, [(img.size[1] * kv * len) as isize, len as isize, 1])
            }
        };
        let row_stride = if ident.is_some() { img.st[1] } else { cs[1] * kv as isize };
        for grp in 0..groups {
            let cols_g = cols.wrapping_offset(grp as isize * gc as isize * row_stride * esize as isize);
            let o = out.at([n0, grp * m, 0, 0, 0]);
            let r = if weight_grad {
                // w[g] (m × kc) += Σ_n lhs[n, g] (m × len) @ cols[n, g]ᵀ (len × kc)
                let block = acc_ptr.get().wrapping_add(grp * m * kc * esize);
                Raw {
                    batch: n1 - n0,
                    m,
                    n: kc,
                    k: len,
                    out: (block, [0, 1, m as isize]),
                    lhs: (o, [out.st[0], out.st[1], lhs_len]),
                    rhs: (cols_g, [cs[0], cs[2], cs[1]]),
                    sum_batches: true,
                    accumulate: true,
                }
            } else {
                // out[n, g] (m × len) (+)= w[g] (m × kc) @ cols[n, g] (kc × len)
                Raw {
                    batch: n1 - n0,
                    m,
                    n: len,
                    k: kc,
                    out: (o, [out.st[0], out.st[1], lhs_len]),
                    lhs: (w.row(grp * m), [0, w.rs, w.cs]),
                    rhs: (cols_g, cs),
                    sum_batches: false,
                    accumulate,
                }
            };
            // SAFETY: per the contract; each chunk writes its own samples (or, summing, the
            // chunks run one after the other).
            unsafe { matmul::raw_product(dtype, &r, kernel)? };
        }
        Ok(())
    })?;
    if weight_grad {
        add_column_major(dtype, acc_ptr.get(), groups, m, kc, w);
    }
    Ok(())
}

/// `w[g·m + i, j] += acc[g][j·m + i]`: a weight gradient summed in column-major scratch.
fn add_column_major(dtype: DType, acc: *const u8, groups: usize, m: usize, kc: usize, w: Matrix) {
    cell_dispatch!(dtype, |T| {
        let acc = acc.cast::<T>();
        for grp in 0..groups {
            for j in 0..kc {
                for i in 0..m {
                    // SAFETY: `acc` holds groups·m·kc elements; `w` is the weight's matrix.
                    unsafe {
                        let dst = w.row(grp * m + i).cast::<T>().offset(j as isize * w.cs);
                        *dst = (*dst).add(*acc.add((grp * kc + j) * m + i));
                    }
                }
            }
        }
    }, else {})
}

/// The most column positions (output pixels) a window may have for its products to take a
/// chunk of samples as one product ([`Layout::Folded`]) rather than one per sample. Measured on
/// ResNet-18's layers (batch 4, 1 thread, 2-core AMD EPYC): folded, the 2×2 and 4×4 layers'
/// products ran 2-5× faster (input gradient 9.4 → 2.5 ms, weight gradient 8.2 → 1.6 ms for
/// 512 channels), the 8×8 layers' weight gradient 16% faster and their other products 5-13%
/// slower; the 16×16 and 32×32 layers ran 10-35% slower folded (a chunk's columns no longer
/// stay in cache between the unfold and the product, and the gather and scatter cost more).
const FOLD_MAX_LEN: usize = 64;

/// Whether the products of a window with `len` column positions are folded.
fn folds(len: usize) -> bool {
    len <= FOLD_MAX_LEN
}

/// [`unfold_product`] with each chunk of samples as one product over [`Layout::Folded`]
/// columns (`C·kvol × samples·len`): the forward product writes a channel-major scratch
/// (`[m·groups, samples, len]`) scattered into `out` after; a weight gradient reads `out` (its
/// left operand) gathered channel-major, so the sum over the chunk's samples is one product of
/// depth `samples·len` rather than a sum of products of depth `len`.
///
/// # Safety
/// As [`unfold_product`], the window not the identity and `out` dense along its spatial
/// dimensions.
#[allow(clippy::too_many_arguments)]
unsafe fn unfold_product_folded(
    dtype: DType,
    img: &View,
    g: &Geometry,
    groups: usize,
    m: usize,
    w: Matrix,
    out: &View,
    accumulate: bool,
    weight_grad: bool,
    kernel: &str,
) -> Result<()> {
    let gc = img.size[1] / groups;
    let (kv, len) = (g.kvol(), g.len());
    let kc = gc * kv;
    let esize = dtype.size();
    let cols_per_sample = img.size[1] * kv * len;
    let per_sample = (cols_per_sample + out.size[1] * len) * esize;
    over_samples(img.size[0], per_sample, false, |n0, n1, buf| {
        let width = (n1 - n0) * len;
        let other = buf.wrapping_add(cols_per_sample * (n1 - n0) * esize);
        // SAFETY: per the contract; `buf` holds the columns of samples n0..n1, then `other`
        // (their channel-major output or left operand).
        unsafe {
            unfold(dtype, img, g, n0, n1, buf, Layout::Folded)?;
            if weight_grad {
                gather(dtype, out, n0, n1, other)?;
            }
        }
        for grp in 0..groups {
            let cols_g = buf.wrapping_add(grp * kc * width * esize);
            let other_g = other.wrapping_add(grp * m * width * esize);
            let r = if weight_grad {
                // w[g] (m × kc) += lhs[g] (m × samples·len) @ cols[g]ᵀ (samples·len × kc),
                // into the weight directly: one product per chunk, so the packing the
                // column-major scratch of `unfold_product` saves per sample is paid once (and
                // adding a scratch of a 512-channel 3×3 weight took longer than the product).
                Raw {
                    batch: 1,
                    m,
                    n: kc,
                    k: width,
                    out: (w.row(grp * m), [0, w.rs, w.cs]),
                    lhs: (other_g, [0, width as isize, 1]),
                    rhs: (cols_g, [0, 1, width as isize]),
                    sum_batches: false,
                    accumulate: true,
                }
            } else {
                // out[g] (m × samples·len) = w[g] (m × kc) @ cols[g] (kc × samples·len)
                Raw {
                    batch: 1,
                    m,
                    n: width,
                    k: kc,
                    out: (other_g, [0, width as isize, 1]),
                    lhs: (w.row(grp * m), [0, w.rs, w.cs]),
                    rhs: (cols_g, [0, width as isize, 1]),
                    sum_batches: false,
                    accumulate: false,
                }
            };
            // SAFETY: per the contract; the chunks run one after the other.
            unsafe { matmul::raw_product(dtype, &r, kernel)? };
        }
        if !weight_grad {
            // SAFETY: `other` holds the chunk's output, channel-major.
            unsafe { scatter(dtype, other, out, n0, n1, accumulate)? };
        }
        Ok(())
    })
}

/// Multiply, then fold: `out[n] = init + fold(cols)` with, per group `g`,
/// `cols[g·mc + i, ·] = Σ_j w[g·kc + j, i] · src[n, g·kc + j, ·]` (`kc` = src channels per group,
/// `mc` = out channels per group × kvol: `w[g]ᵀ · src[n, g]`).
///
/// # Safety
/// As [`unfold_product`]; `out` is dense along its spatial dimensions when the window is the
/// identity.
#[allow(clippy::too_many_arguments)]
unsafe fn product_fold(
    dtype: DType,
    src: &View,
    g: &Geometry,
    groups: usize,
    w: Matrix,
    out: &View,
    init: Option<*const u8>,
    kernel: &str,
) -> Result<()> {
    let samples = src.size[0];
    let kc = src.size[1] / groups;
    let (kv, len) = (g.kvol(), g.len());
    let oc = out.size[1] / groups;
    let mc = oc * kv;
    let esize = dtype.size();
    let Some(src_len) = src.merged(2) else {
        return Err(Error::runtime(format!("{kernel}: expected a source with dense spatial dimensions")));
    };
    let ident = g.identity().then(|| out.merged(2)).flatten();
    let folded = ident.is_none() && folds(len);
    let cols_per_sample = if ident.is_some() { 0 } else { out.size[1] * kv * len };
    // Folded, a chunk's source goes channel-major after its columns (`[C, samples, len]`).
    let per_sample = (cols_per_sample + if folded { src.size[1] * len } else { 0 }) * esize;
    if let (Some(_), Some(init)) = (ident, init) {
        // The products accumulate onto the initial values.
        fill_planes(dtype, out, init)?;
    }
    let init = init.map(|p| Addr(p.cast_mut()));
    over_samples(samples, per_sample, ident.is_none() && !folded, |n0, n1, buf| {
        let width = (n1 - n0) * len;
        // The columns (output side) and the source: as they are, or folded over the chunk's
        // samples into one product (the source gathered channel-major after the columns).
        let (cols, cs, source, ss) = if folded {
            let source = buf.wrapping_add(cols_per_sample * (n1 - n0) * esize);
            // SAFETY: per the contract; `source` has room for the chunk's source.
            unsafe { gather(dtype, src, n0, n1, source)? };
            (buf, [0, width as isize, 1], source, [0, width as isize, 1])
        } else {
            let (cols, cs) = match ident {
                Some(sl) => (out.at([n0, 0, 0, 0, 0]), [out.st[0], out.st[1], sl]),
                None => (buf, [cols_per_sample as isize, len as isize, 1]),
            };
            (cols, cs, src.at([n0, 0, 0, 0, 0]), [src.st[0], src.st[1], src_len])
        };
        for grp in 0..groups {
            let r = Raw {
                batch: if folded { 1 } else { n1 - n0 },
                m: mc,
                n: if folded { width } else { len },
                k: kc,
                out: (cols.wrapping_offset(grp as isize * mc as isize * cs[1] * esize as isize), cs),
                lhs: (w.row(grp * kc), [0, w.cs, w.rs]),
                rhs: (source.wrapping_offset(grp as isize * kc as isize * ss[1] * esize as isize), ss),
                sum_batches: false,
                accumulate: ident.is_some() && init.is_some(),
            };
            // SAFETY: per the contract; each chunk writes its own columns or samples.
            unsafe { matmul::raw_product(dtype, &r, kernel)? };
        }
        if ident.is_none() {
            let layout = if folded { Layout::Folded } else { Layout::PerSample };
            // SAFETY: per the contract; `buf` holds the columns of samples n0..n1.
            unsafe { fold(dtype, buf, g, n0, n1, out, init.map(|p| p.get().cast_const()), layout)? };
        }
        Ok(())
    })
}

/// Every plane of `out` (`[N, C, ...]`) filled with `values[c]`.
fn fill_planes(dtype: DType, out: &View, values: *const u8) -> Result<()> {
    let values = Addr(values.cast_mut());
    let planes = out.size[0] * out.size[1];
    let len: usize = out.size[2..].iter().product();
    let dense = out.merged(2) == Some(1);
    cell_dispatch!(dtype, |T| {
        host::parallel_for(planes, GRAIN.div_ceil(len.max(1)), |i0, i1| {
            for i in i0..i1 {
                let (n, c) = (i / out.size[1], i % out.size[1]);
                // SAFETY: `values` has one element per channel; each item writes its plane.
                unsafe {
                    let v = *values.get().cast::<T>().add(c);
                    let p = out.at([n, c, 0, 0, 0]).cast::<T>();
                    if dense {
                        // A plain fill the compiler vectorises (the strided loop below took 9%
                        // of a biased 64-channel 16×16 convolution).
                        std::slice::from_raw_parts_mut(p, len).fill(v);
                        continue;
                    }
                    for z in 0..out.size[2] {
                        for y in 0..out.size[3] {
                            for x in 0..out.size[4] {
                                *p.offset(z as isize * out.st[2] + y as isize * out.st[3] + x as isize * out.st[4]) = v;
                            }
                        }
                    }
                }
            }
        });
        Ok(())
    }, else Err(Error::not_implemented(format!("fill not implemented for '{}'", dtype.name()))))
}

/// The dtype the products run in: float32 for float16 and bfloat16.
fn compute_dtype(dtype: DType) -> DType {
    if matches!(dtype, DType::F16 | DType::BF16) { DType::F32 } else { dtype }
}

/// A convolution's checked parameters.
struct Params {
    /// Spatial dimensions (1 to 3).
    dims: usize,
    groups: usize,
    stride: [usize; 3],
    pad: [usize; 3],
    dil: [usize; 3],
    out_pad: [usize; 3],
    transposed: bool,
}

/// `v` expanded to `dims` values padded to three (leading `fill`), as ATen's `expand_param_if_needed`.
fn spatial(v: &[i64], dims: usize, fill: usize, name: &str, min: i64) -> Result<[usize; 3]> {
    let vals: Vec<i64> = match v.len() {
        1 => vec![v[0]; dims],
        n if n == dims => v.to_vec(),
        n => {
            return Err(Error::runtime(format!(
                "expected {name} to be a single integer value or a list of {dims} values to match the convolution dimensions, but got {name}={v:?} ({n} values)"
            )));
        }
    };
    if let Some(bad) = vals.iter().find(|&&x| x < min) {
        let what = if min == 0 { "non-negative" } else { "positive" };
        return Err(Error::runtime(format!("{name} should be {what}, but got {bad}")));
    }
    let mut out = [fill; 3];
    for (i, &x) in vals.iter().enumerate() {
        out[3 - dims + i] = x as usize;
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn params(
    input: &TensorRef<'_>,
    weight: &TensorRef<'_>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Params> {
    let dims = input.dim().saturating_sub(2);
    if !(1..=3).contains(&dims) || weight.dim() != input.dim() {
        return Err(Error::runtime(format!(
            "Expected {}D (unbatched) or {}D (batched) input to convolution_overrideable with a weight of the same dimensions (3 to 5), but got input of size: {:?} and weight of size: {:?}",
            weight.dim().max(3) - 1,
            weight.dim().max(3),
            input.sizes(),
            weight.sizes()
        )));
    }
    if groups <= 0 {
        return Err(Error::runtime("non-positive groups is not supported"));
    }
    let p = Params {
        dims,
        groups: groups as usize,
        stride: spatial(stride, dims, 1, "stride", 1)?,
        pad: spatial(padding, dims, 0, "padding", 0)?,
        dil: spatial(dilation, dims, 1, "dilation", 1)?,
        out_pad: spatial(output_padding, dims, 0, "output_padding", 0)?,
        transposed,
    };
    if transposed && (0..3).any(|d| p.out_pad[d] >= p.stride[d] && p.out_pad[d] >= p.dil[d]) {
        // CPU's slow_conv_transpose{2,3}d_shape_check (dimensions named as the 3-d one does).
        let names = ["depth", "height", "width"];
        let list = |what: &str, v: &[usize; 3]| {
            (3 - dims..3).map(|d| format!("{what}_{}: {}", names[d], v[d])).collect::<Vec<_>>().join(" ")
        };
        return Err(Error::runtime(format!(
            "output padding must be smaller than either stride or dilation, but got {} {} {}",
            list("output_padding", &p.out_pad),
            list("stride", &p.stride),
            list("dilation", &p.dil)
        )));
    }
    let (c, ws) = (input.sizes()[1], weight.sizes());
    let g = groups;
    let ok = if transposed { ws[0] == c && c % g == 0 } else { ws[0] % g == 0 && ws[1] * g == c };
    if !ok {
        let expected = if transposed { ws[0] } else { ws[1] * g };
        return Err(Error::runtime(format!(
            "Given groups={g}, weight of size {ws:?}, expected input{:?} to have {expected} channels, but got {c} channels instead",
            input.sizes()
        )));
    }
    if ws[2..].iter().any(|&s| s < 1) {
        return Err(Error::runtime(format!(
            "convolution_overrideable: expected a kernel of positive sizes, but got weight of size {ws:?}"
        )));
    }
    Ok(p)
}

impl Params {
    fn kernel(&self, weight: &TensorRef<'_>) -> [usize; 3] {
        let mut k = [1; 3];
        for i in 0..self.dims {
            k[3 - self.dims + i] = weight.sizes()[2 + i] as usize;
        }
        k
    }
    fn image(&self, t: &TensorRef<'_>) -> [usize; 3] {
        let mut s = [1; 3];
        for i in 0..self.dims {
            s[3 - self.dims + i] = t.sizes()[2 + i] as usize;
        }
        s
    }
    /// The window between the convolution's input and output (`img` the input for a plain
    /// convolution, the output for a transposed one), from the input's spatial sizes.
    fn geometry(&self, input: &TensorRef<'_>, weight: &TensorRef<'_>) -> Result<Geometry> {
        let (k, size) = (self.kernel(weight), self.image(input));
        let mut out = [1usize; 3];
        for d in 3 - self.dims..3 {
            let span = (self.dil[d] * (k[d] - 1) + 1) as i64;
            let o = if self.transposed {
                (size[d] as i64 - 1) * self.stride[d] as i64 - 2 * self.pad[d] as i64 + span + self.out_pad[d] as i64
            } else {
                (size[d] as i64 + 2 * self.pad[d] as i64 - span).div_euclid(self.stride[d] as i64) + 1
            };
            if o < 1 {
                let padded: Vec<i64> = (3 - self.dims..3).map(|d| size[d] as i64 + 2 * self.pad[d] as i64).collect();
                let kernel: Vec<i64> = (3 - self.dims..3).map(|d| (self.dil[d] * (k[d] - 1) + 1) as i64).collect();
                return Err(Error::runtime(if self.transposed {
                    format!("convolution_overrideable: the transposed convolution's output size is too small ({o})")
                } else {
                    format!(
                        "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                        join(&padded),
                        join(&kernel)
                    )
                }));
            }
            out[d] = o as usize;
        }
        let (img, cols) = if self.transposed { (out, size) } else { (size, out) };
        Ok(Geometry { img, cols, k, stride: self.stride, pad: self.pad, dil: self.dil })
    }
    fn out_shape(&self, input: &TensorRef<'_>, weight: &TensorRef<'_>, g: &Geometry) -> Vec<i64> {
        let channels = if self.transposed { weight.sizes()[1] * self.groups as i64 } else { weight.sizes()[0] };
        let side = if self.transposed { g.img } else { g.cols };
        let mut shape = vec![input.sizes()[0], channels];
        shape.extend(side[3 - self.dims..].iter().map(|&s| s as i64));
        shape
    }
    /// The name of CPU's kernel, for its "not implemented" messages.
    fn kernel_name(&self, backward: bool) -> &'static str {
        match (self.transposed, self.dims == 3, backward) {
            (false, false, false) => "slow_conv2d_cpu",
            (false, false, true) => "slow_conv2d_cpu_grad_input",
            (false, true, false) => "slow_conv3d_cpu",
            (false, true, true) => "slow_conv3d_cpu_grad_input",
            (true, false, false) => "slow_conv_transpose2d_out_cpu",
            (true, false, true) => "slow_conv_transpose2d_backward_out_cpu",
            (true, true, false) => "slow_conv_transpose3d_out_cpu",
            (true, true, true) => "slow_conv_transpose3d_backward_out_cpu",
        }
    }
}

fn join(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(" x ")
}

/// The dtypes CPU's slow kernels take: floats and complex everywhere, integers in a plain
/// convolution's forward (and int64 in a transposed one).
fn check_dtype(p: &Params, dtype: DType, backward: bool) -> Result<()> {
    let ok = match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 => true,
        DType::U8 | DType::I8 | DType::I16 | DType::I32 => !backward && !p.transposed,
        DType::I64 => !backward,
        DType::Bool => false,
    };
    if ok { Ok(()) } else { Err(not_implemented(p.kernel_name(backward), dtype)) }
}

fn same_dtype(a: &TensorRef<'_>, b: &TensorRef<'_>, what: &str) -> Result<()> {
    if a.dtype() != b.dtype() {
        let name = |t: &TensorRef<'_>| DType::from_scalar_type(t.dtype()).map_or("Unknown", DType::name);
        return Err(Error::runtime(format!(
            "Input type ({}) and {what} type ({}) should be the same",
            name(a),
            name(b)
        )));
    }
    Ok(())
}

/// `convolution_overrideable`: `input [N, C, *S]`, `weight [O, C/groups, *K]` (transposed:
/// `[C, O/groups, *K]`), an optional bias `[O]`.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: TensorRef<'_>,
    weight: TensorRef<'_>,
    bias: Option<TensorRef<'_>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let p = params(&input, &weight, stride, padding, dilation, transposed, output_padding, groups)?;
    same_dtype(&input, &weight, "weight")?;
    let dtype = DType::from_scalar_type(input.dtype())?;
    check_dtype(&p, dtype, false)?;
    let g = p.geometry(&input, &weight)?;
    let shape = p.out_shape(&input, &weight, &g);
    if let Some(b) = &bias {
        same_dtype(&input, b, "bias")?;
        if b.dim() != 1 || b.sizes()[0] != shape[1] {
            return Err(Error::runtime(format!(
                "Given weight of size {:?}, expected bias to be 1-dimensional with {} elements, but got bias of size {:?} instead",
                weight.sizes(),
                shape[1],
                b.sizes()
            )));
        }
    }
    let cd = compute_dtype(dtype);
    let out = crate::engine::iter::new_tensor(&shape, cd)?;
    if out.as_ref().numel() > 0 {
        let mut keep = Vec::new();
        let bias = match bias {
            Some(b) => Some(copy::dense(b, cd)?),
            None => None,
        };
        let init = bias.as_ref().map(|b| b.as_ref().data_ptr().cast::<u8>().cast_const());
        let o = View::of(&out.as_ref(), true)?;
        let w = weight_matrix(weight, cd, &mut keep)?;
        let kernel = p.kernel_name(false);
        let groups = p.groups;
        // SAFETY: the views describe the call's tensors, checked above; `out` is fresh.
        unsafe {
            if p.transposed {
                let x = operand(input, cd, |v| v.merged(2).is_some(), &mut keep)?;
                product_fold(cd, &x, &g, groups, w, &o, init, kernel)?;
            } else {
                let x = operand(input, cd, |_| true, &mut keep)?;
                if let Some(init) = init {
                    fill_planes(cd, &o, init)?;
                }
                let m = shape[1] as usize / groups;
                unfold_product(cd, &x, &g, groups, m, w, &o, init.is_some(), false, kernel)?;
            }
        }
    }
    if cd == dtype {
        return Ok(out);
    }
    copy::dense(out.as_ref(), dtype)
}

/// `convolution_backward_overrideable`: the gradients `mask` asks for (input, weight, bias), in
/// the dtypes of input, weight and grad_output.
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward(
    grad: TensorRef<'_>,
    input: TensorRef<'_>,
    weight: TensorRef<'_>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let p = params(&input, &weight, stride, padding, dilation, transposed, output_padding, groups)?;
    same_dtype(&input, &weight, "weight")?;
    same_dtype(&input, &grad, "grad_output")?;
    let dtype = DType::from_scalar_type(input.dtype())?;
    let want = |i: usize| mask.get(i) == Some(&true);
    if want(0) || want(1) {
        check_dtype(&p, dtype, true)?;
    }
    let g = p.geometry(&input, &weight)?;
    let shape = p.out_shape(&input, &weight, &g);
    if grad.sizes() != shape.as_slice() {
        return Err(Error::runtime(format!(
            "convolution_backward_overrideable: expected grad_output of the output's shape {shape:?}, but got {:?}",
            grad.sizes()
        )));
    }
    let cd = compute_dtype(dtype);
    let kernel = p.kernel_name(true);
    let groups = p.groups;
    let mut keep = Vec::new();
    let gview = |keep: &mut Vec<Tensor>| operand(grad, cd, |v| v.merged(2).is_some(), keep);
    let grad_input = if want(0) {
        let gi = crate::engine::iter::new_tensor(input.sizes(), cd)?;
        if gi.as_ref().numel() > 0 {
            let o = View::of(&gi.as_ref(), true)?;
            let w = weight_matrix(weight, cd, &mut keep)?;
            let go = gview(&mut keep)?;
            // SAFETY: the views describe the call's tensors; `gi` is fresh.
            unsafe {
                if p.transposed {
                    // The gradient of a transposed convolution's input is the plain convolution
                    // of grad with the weight: unfold grad (the image side), multiply.
                    let m = input.sizes()[1] as usize / groups;
                    unfold_product(cd, &go, &g, groups, m, w, &o, false, false, kernel)?;
                } else {
                    product_fold(cd, &go, &g, groups, w, &o, None, kernel)?;
                }
            }
        }
        finish(gi, dtype)?
    } else {
        Tensor::undefined()
    };
    let grad_weight = if want(1) {
        let gw = crate::engine::iter::new_tensor(weight.sizes(), cd)?;
        let wv = View::of(&gw.as_ref(), true)?;
        let total = gw.as_ref().numel() as usize * cd.size();
        // SAFETY: a fresh contiguous tensor of `total` bytes; the products accumulate into it.
        unsafe { std::ptr::write_bytes(gw.as_ref().data_ptr().cast::<u8>(), 0, total) };
        if gw.as_ref().numel() > 0 && input.numel() > 0 {
            let w = Matrix { ptr: wv.ptr, rs: wv.st[0], cs: 1, esize: wv.esize };
            let go = gview(&mut keep)?;
            let x = operand(input, cd, |v| v.merged(2).is_some(), &mut keep)?;
            // SAFETY: as above.
            unsafe {
                if p.transposed {
                    // w[g] (C/g × O/g·kvol) += Σ_n input[n, g] · cols(grad[n])[g]ᵀ
                    let m = input.sizes()[1] as usize / groups;
                    unfold_product(cd, &go, &g, groups, m, w, &x, true, true, kernel)?;
                } else {
                    // w[g] (O/g × C/g·kvol) += Σ_n grad[n, g] · cols(input[n])[g]ᵀ
                    let m = weight.sizes()[0] as usize / groups;
                    unfold_product(cd, &x, &g, groups, m, w, &go, true, true, kernel)?;
                }
            }
        }
        finish(gw, dtype)?
    } else {
        Tensor::undefined()
    };
    let grad_bias = if want(2) {
        use crate::ops::reduce as r;
        let gb = crate::engine::iter::new_tensor(&shape[1..2], dtype)?;
        let reduced: Vec<bool> = (0..grad.dim()).map(|d| d != 1).collect();
        r::reduce_into(&r::Sum::<false, false>, grad, dtype, &reduced, false, &[gb.as_ref()])?;
        gb
    } else {
        Tensor::undefined()
    };
    Ok((grad_input, grad_weight, grad_bias))
}

/// `t` (computed in the compute dtype) in `dtype`.
fn finish(t: Tensor, dtype: DType) -> Result<Tensor> {
    if DType::from_scalar_type(t.as_ref().dtype())? == dtype { Ok(t) } else { copy::dense(t.as_ref(), dtype) }
}

/// One of the backends' own convolution ops (`_slow_conv2d_forward`, `slow_conv_transpose3d`,
/// `_conv_depthwise2d`, ...): its spatial dimensions, whether it is transposed, whether its
/// groups are the input's channels, and what it makes of an unbatched input.
#[derive(Clone, Copy)]
pub struct Backend {
    pub dims: usize,
    pub transposed: bool,
    pub depthwise: bool,
    pub unbatched: Unbatched,
}

/// An input with one dimension fewer than the weight, as CPU's kernel takes it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unbatched {
    /// Refused with this message (the input's sizes follow).
    Refused(&'static str),
    /// A batch of one, dropped from the result.
    Squeezed,
    /// A batch of one, kept in the result (CPU's slow_conv_transpose2d/3d).
    Kept,
}

use Unbatched::{Kept, Refused, Squeezed};

pub const SLOW2D: Backend =
    Backend { dims: 2, transposed: false, depthwise: false, unbatched: Refused("Expected 4D input tensor, but got: ") };
pub const SLOW3D: Backend = Backend {
    dims: 3,
    transposed: false,
    depthwise: false,
    unbatched: Refused("non-empty 5D input tensor expected but got: "),
};
pub const DILATED2D: Backend = Backend { dims: 2, transposed: false, depthwise: false, unbatched: Squeezed };
pub const DILATED3D: Backend = Backend { dims: 3, transposed: false, depthwise: false, unbatched: Squeezed };
pub const TRANSPOSE2D: Backend = Backend { dims: 2, transposed: true, depthwise: false, unbatched: Kept };
pub const TRANSPOSE3D: Backend = Backend { dims: 3, transposed: true, depthwise: false, unbatched: Kept };
pub const DEPTHWISE2D: Backend = Backend { dims: 2, transposed: false, depthwise: true, unbatched: Squeezed };
pub const DEPTHWISE3D: Backend = Backend { dims: 3, transposed: false, depthwise: true, unbatched: Squeezed };

/// `t` with a leading dimension of 1 (a view).
fn unsqueezed(t: &TensorRef<'_>) -> Result<Tensor> {
    let mut sizes = vec![1];
    sizes.extend_from_slice(t.sizes());
    let mut strides = vec![t.numel().max(1)];
    strides.extend_from_slice(t.strides());
    host::as_strided(t, &sizes, &strides, t.storage_offset())
}

/// A backend op: [`convolution`] with its fixed arguments, `kernel_size` checked against the
/// weight, an unbatched input (one dimension fewer) taken as a batch of one.
#[allow(clippy::too_many_arguments)]
pub fn backend(
    op: Backend,
    input: TensorRef<'_>,
    weight: TensorRef<'_>,
    kernel_size: &[i64],
    bias: Option<TensorRef<'_>>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    dilation: &[i64],
) -> Result<Tensor> {
    if weight.dim() != op.dims + 2 {
        return Err(Error::runtime(format!(
            "Expected {}D weight for a {}-d convolution, but got weight of size {:?}",
            op.dims + 2,
            op.dims,
            weight.sizes()
        )));
    }
    let kernel = spatial(kernel_size, op.dims, 1, "kernel_size", 1)?;
    let mut expected = [1usize; 3];
    for (i, &k) in weight.sizes()[2..].iter().enumerate() {
        expected[3 - op.dims + i] = k.max(0) as usize;
    }
    if kernel != expected {
        return Err(Error::runtime(format!(
            "expected kernel_size {kernel_size:?} to match the weight's spatial sizes {:?}",
            &weight.sizes()[2..]
        )));
    }
    let unbatched = input.dim() == op.dims + 1;
    if let (true, Refused(message)) = (unbatched, op.unbatched) {
        return Err(Error::runtime(format!("{message}{:?}", input.sizes())));
    }
    let batched = if unbatched { Some(unsqueezed(&input)?) } else { None };
    let x = batched.as_ref().map_or(input, Tensor::as_ref);
    let groups = if op.depthwise { x.sizes().get(1).copied().unwrap_or(1).max(1) } else { 1 };
    let out = convolution(x, weight, bias, stride, padding, dilation, op.transposed, output_padding, groups)?;
    if !unbatched || op.unbatched == Kept {
        return Ok(out);
    }
    let o = out.as_ref();
    host::as_strided(&o, &o.sizes()[1..], &o.strides()[1..], o.storage_offset())
}

/// A backend op's `.out` form: the result copied into `out` (resized).
#[allow(clippy::too_many_arguments)]
pub fn backend_out(
    op: Backend,
    input: TensorRef<'_>,
    weight: TensorRef<'_>,
    kernel_size: &[i64],
    bias: Option<TensorRef<'_>>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    dilation: &[i64],
    out: TensorRef<'_>,
) -> Result<()> {
    let r = backend(op, input, weight, kernel_size, bias, stride, padding, output_padding, dilation)?;
    with_size(&out, r.as_ref().sizes(), |o| copy::copy_(*o, r.as_ref()))
}

/// ATen's `div_rtn` for the sliding-block counts (rounds toward negative infinity).
fn blocks(size: i64, pad: i64, dil: i64, k: i64, stride: i64) -> i64 {
    (size + 2 * pad - (dil * (k - 1) + 1)).div_euclid(stride) + 1
}

fn pair(v: &[i64], name: &str) -> Result<[i64; 2]> {
    match *v {
        [a, b] => Ok([a, b]),
        [a] => Ok([a, a]),
        _ => Err(Error::runtime(format!("{name} must be two integers, but got {v:?}"))),
    }
}

/// The window checks `im2col_shape_check` and `col2im_shape_check` share, with their messages.
fn check_window(k: [i64; 2], dil: [i64; 2], pad: [i64; 2], stride: [i64; 2]) -> Result<()> {
    let c = |ok: bool, m: String| if ok { Ok(()) } else { Err(Error::runtime(m)) };
    c(
        k[0] > 0 && k[1] > 0,
        format!("kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}", k[0], k[1]),
    )?;
    c(
        dil[0] > 0 && dil[1] > 0,
        format!("dilation should be greater than zero, but got dilation_height: {} dilation_width: {}", dil[0], dil[1]),
    )?;
    c(
        pad[0] >= 0 && pad[1] >= 0,
        format!("padding should be non-negative, but got pad_height: {} pad_width: {}", pad[0], pad[1]),
    )?;
    c(
        stride[0] > 0 && stride[1] > 0,
        format!("stride should be greater than zero, but got stride_height: {} stride_width: {}", stride[0], stride[1]),
    )
}

/// ATen's `TensorBase::size(d)` error for a tensor with too few dimensions.
fn too_few_dims(t: &TensorRef<'_>, d: usize) -> Error {
    let n = t.dim() as i64;
    if n == 0 {
        Error::index(format!("Dimension specified as {d} but tensor has no dimensions"))
    } else {
        Error::index(format!("Dimension out of range (expected to be in range of [{}, {}], but got {d})", -n, n - 1))
    }
}

/// The dtypes of CPU's im2col and col2im: floats, complex and bool (true where any column is).
fn unfold_dtype(t: &TensorRef<'_>, kernel: &str) -> Result<DType> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 | DType::Bool => Ok(dtype),
        _ => Err(not_implemented(kernel, dtype)),
    }
}

/// `im2col.out`: `[N, C, H, W]` (or `[C, H, W]`) into `[N, C·kh·kw, L]`.
pub fn im2col_out(
    input: TensorRef<'_>,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    out: TensorRef<'_>,
) -> Result<()> {
    let (k, dil, pad, st) = (
        pair(kernel_size, "kernel_size")?,
        pair(dilation, "dilation")?,
        pair(padding, "padding")?,
        pair(stride, "stride")?,
    );
    check_window(k, dil, pad, st)?;
    let (ndim, s) = (input.dim(), input.sizes());
    // ATen reads size(1) and size(2) before it checks the rank.
    if ndim < 2 || (ndim == 2 && s[1] != 0) {
        return Err(too_few_dims(&input, if ndim < 2 { 1 } else { 2 }));
    }
    let valid = s[1] != 0 && s[2] != 0;
    if !((ndim == 3 && s[0] != 0 && valid) || (ndim == 4 && valid && s[3] != 0)) {
        return Err(Error::runtime(format!(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {s:?}"
        )));
    }
    let batched = ndim == 4;
    let lead = usize::from(batched);
    let (h, w) = (s[lead + 1], s[lead + 2]);
    let (oh, ow) = (blocks(h, pad[0], dil[0], k[0], st[0]), blocks(w, pad[1], dil[1], k[1], st[1]));
    if oh < 1 || ow < 1 {
        return Err(Error::runtime(format!(
            "Given input with spatial size ({h}, {w}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), calculated shape of the array of sliding blocks as ({oh}, {ow}), but its components must be at least one.",
            k[0], k[1], dil[0], dil[1], pad[0], pad[1]
        )));
    }
    let dtype = unfold_dtype(&input, "im2col_out_cpu")?;
    if out.dtype() != input.dtype() {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            dtype.name(),
            DType::from_scalar_type(out.dtype()).map_or("Unknown", DType::name)
        )));
    }
    let c = s[lead];
    let mut shape = vec![c * k[0] * k[1], oh * ow];
    if batched {
        shape.insert(0, s[0]);
    }
    let g = Geometry {
        img: [1, h as usize, w as usize],
        cols: [1, oh as usize, ow as usize],
        k: [1, k[0] as usize, k[1] as usize],
        stride: [1, st[0] as usize, st[1] as usize],
        pad: [0, pad[0] as usize, pad[1] as usize],
        dil: [1, dil[0] as usize, dil[1] as usize],
    };
    let result = crate::engine::iter::new_tensor(&shape, dtype)?;
    let img = View::of(&input, batched)?;
    let x = if input.is_conj() || input.is_neg() { Some(copy::dense(input, dtype)?) } else { None };
    let img = match &x {
        Some(t) => View::of(&t.as_ref(), batched)?,
        None => img,
    };
    // SAFETY: `result` is fresh with room for every sample's columns.
    unsafe { unfold(dtype, &img, &g, 0, img.size[0], result.as_ref().data_ptr().cast(), Layout::PerSample)? };
    with_size(&out, &shape, |out| copy::copy_(*out, result.as_ref()))
}

/// `col2im.out`: `[N, C·kh·kw, L]` (or unbatched) summed into `[N, C, output_size]`.
#[allow(clippy::too_many_arguments)]
pub fn col2im_out(
    input: TensorRef<'_>,
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
    out: TensorRef<'_>,
) -> Result<()> {
    let size = pair(output_size, "output_size")?;
    let (k, dil, pad, st) = (
        pair(kernel_size, "kernel_size")?,
        pair(dilation, "dilation")?,
        pair(padding, "padding")?,
        pair(stride, "stride")?,
    );
    // col2im_shape_check's order: kernel, stride, dilation, padding.
    check_window(k, [1, 1], [0, 0], [1, 1])?;
    check_window(k, [1, 1], [0, 0], st)?;
    check_window(k, dil, [0, 0], st)?;
    check_window(k, dil, pad, st)?;
    let (ndim, s) = (input.dim(), input.sizes());
    if !((ndim == 2 && s[0] != 0 && s[1] != 0) || (ndim == 3 && s[1] != 0 && s[2] != 0)) {
        return Err(Error::runtime(format!(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {s:?}"
        )));
    }
    let batched = ndim == 3;
    let lead = usize::from(batched);
    let (planes, len) = (s[lead], s[lead + 1]);
    let kprod = k[0] * k[1];
    if planes % kprod != 0 {
        return Err(Error::runtime(format!(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={planes} and kernel_size=({}, {}).",
            k[0], k[1]
        )));
    }
    let (oh, ow) = (blocks(size[0], pad[0], dil[0], k[0], st[0]), blocks(size[1], pad[1], dil[1], k[1], st[1]));
    let window = format!(
        "Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), stride=({}, {}), ",
        size[0], size[1], k[0], k[1], dil[0], dil[1], pad[0], pad[1], st[0], st[1]
    );
    if len != oh * ow {
        return Err(Error::runtime(format!(
            "{window}expected size of input's dimension 2 to match the calculated number of sliding blocks {oh} * {ow} = {}, but got input.size(2)={len}.",
            oh * ow
        )));
    }
    if oh < 1 || ow < 1 {
        return Err(Error::runtime(format!(
            "{window}calculated shape of the array of sliding blocks as ({oh}, {ow}), which is too small (non-positive)"
        )));
    }
    if size[0] < 1 || size[1] < 1 {
        return Err(Error::runtime(format!(
            "Expected output spatial size to be positive, but got: output_size=({}, {}).",
            size[0], size[1]
        )));
    }
    let dtype = unfold_dtype(&input, "col2im_out_cpu")?;
    if out.dtype() != input.dtype() {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            dtype.name(),
            DType::from_scalar_type(out.dtype()).map_or("Unknown", DType::name)
        )));
    }
    let channels = planes / kprod;
    let mut shape = vec![channels, size[0], size[1]];
    if batched {
        shape.insert(0, s[0]);
    }
    let g = Geometry {
        img: [1, size[0] as usize, size[1] as usize],
        cols: [1, oh as usize, ow as usize],
        k: [1, k[0] as usize, k[1] as usize],
        stride: [1, st[0] as usize, st[1] as usize],
        pad: [0, pad[0] as usize, pad[1] as usize],
        dil: [1, dil[0] as usize, dil[1] as usize],
    };
    // The fold reads dense columns.
    let cols = copy::dense(input, dtype)?;
    let result = crate::engine::iter::new_tensor(&shape, dtype)?;
    let img = View::of(&result.as_ref(), batched)?;
    // SAFETY: `cols` holds `[N, C·kh·kw, L]` dense columns; `result` is fresh.
    unsafe { fold(dtype, cols.as_ref().data_ptr().cast(), &g, 0, img.size[0], &img, None, Layout::PerSample)? };
    with_size(&out, &shape, |out| copy::copy_(*out, result.as_ref()))
}

/// This family's kernels: group `conv` of regen.toml's `[implement]`.
impl crate::ConvKernels for crate::Reference {
    fn convolution_overrideable(
        &self,
        input: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    }

    fn convolution_backward_overrideable(
        &self,
        grad_output: regen_runtime::TensorRef<'_>,
        input: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
        output_mask: &[bool],
    ) -> regen_runtime::Result<(regen_runtime::Tensor, regen_runtime::Tensor, regen_runtime::Tensor)> {
        convolution_backward(
            grad_output,
            input,
            weight,
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
            output_mask,
        )
    }

    fn im2col_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        im2col_out(self_, kernel_size, dilation, padding, stride, out)
    }

    fn im2col(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], self_.dtype().0)?;
        self.im2col_out(self_, kernel_size, dilation, padding, stride, out.as_ref())?;
        Ok(out)
    }

    fn col2im_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        output_size: &[i64],
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        col2im_out(self_, output_size, kernel_size, dilation, padding, stride, out)
    }

    fn col2im(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        output_size: &[i64],
        kernel_size: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        let out = regen_runtime::host::empty_strided(&[0], &[1], self_.dtype().0)?;
        self.col2im_out(self_, output_size, kernel_size, dilation, padding, stride, out.as_ref())?;
        Ok(out)
    }

    fn _slow_conv2d_forward(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::SLOW2D, self_, weight, kernel_size, bias, stride, padding, &[0], &[1])
    }

    fn _slow_conv2d_forward_output(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        output: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        use crate::ops::conv as c;
        c::backend_out(c::SLOW2D, self_, weight, kernel_size, bias, stride, padding, &[0], &[1], output)
    }

    fn _slow_conv2d_backward_output_mask(
        &self,
        grad_output: regen_runtime::TensorRef<'_>,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        _kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        output_mask: &[bool],
    ) -> regen_runtime::Result<(regen_runtime::Tensor, regen_runtime::Tensor, regen_runtime::Tensor)> {
        convolution_backward(grad_output, self_, weight, stride, padding, &[1], false, &[0], 1, output_mask)
    }

    fn slow_conv3d_forward(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::SLOW3D, self_, weight, kernel_size, bias, stride, padding, &[0], &[1])
    }

    fn slow_conv3d_forward_output(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        output: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        use crate::ops::conv as c;
        c::backend_out(c::SLOW3D, self_, weight, kernel_size, bias, stride, padding, &[0], &[1], output)
    }

    fn slow_conv_transpose2d(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        dilation: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::TRANSPOSE2D, self_, weight, kernel_size, bias, stride, padding, output_padding, dilation)
    }

    fn slow_conv_transpose2d_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        dilation: &[i64],
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        use crate::ops::conv as c;
        let (k, o) = (kernel_size, output_padding);
        c::backend_out(c::TRANSPOSE2D, self_, weight, k, bias, stride, padding, o, dilation, out)
    }

    fn slow_conv_transpose3d(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        dilation: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::TRANSPOSE3D, self_, weight, kernel_size, bias, stride, padding, output_padding, dilation)
    }

    fn slow_conv_transpose3d_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        dilation: &[i64],
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        use crate::ops::conv as c;
        let (k, o) = (kernel_size, output_padding);
        c::backend_out(c::TRANSPOSE3D, self_, weight, k, bias, stride, padding, o, dilation, out)
    }

    fn _conv_depthwise2d(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::DEPTHWISE2D, self_, weight, kernel_size, bias, stride, padding, &[0], dilation)
    }

    fn _conv_depthwise2d_out(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        out: regen_runtime::TensorRef<'_>,
    ) -> regen_runtime::Result<()> {
        use crate::ops::conv as c;
        c::backend_out(c::DEPTHWISE2D, self_, weight, kernel_size, bias, stride, padding, &[0], dilation, out)
    }

    fn conv_depthwise3d(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::DEPTHWISE3D, self_, weight, kernel_size, bias, stride, padding, &[0], dilation)
    }

    fn slow_conv_dilated2d(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::DILATED2D, self_, weight, kernel_size, bias, stride, padding, &[0], dilation)
    }

    fn slow_conv_dilated3d(
        &self,
        self_: regen_runtime::TensorRef<'_>,
        weight: regen_runtime::TensorRef<'_>,
        kernel_size: &[i64],
        bias: Option<regen_runtime::TensorRef<'_>>,
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
    ) -> regen_runtime::Result<regen_runtime::Tensor> {
        use crate::ops::conv as c;
        c::backend(c::DILATED3D, self_, weight, kernel_size, bias, stride, padding, &[0], dilation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(data: &mut [f64], size: [usize; 5]) -> View {
        let mut st = [1isize; 5];
        for d in (0..4).rev() {
            st[d] = st[d + 1] * size[d + 1] as isize;
        }
        View { ptr: data.as_mut_ptr().cast(), size, st, esize: 8 }
    }

    #[test]
    fn fold_is_the_adjoint_of_unfold() {
        // <unfold(x), y> == <x, fold(y)> for a strided, padded, dilated 2-d window.
        let g = Geometry {
            img: [1, 7, 6],
            cols: [1, 3, 4],
            k: [1, 3, 2],
            stride: [1, 2, 1],
            pad: [0, 1, 2],
            dil: [1, 2, 3],
        };
        let (plane, rows) = (7 * 6, g.kvol() * g.len());
        let mut x: Vec<f64> = (0..2 * plane).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let y: Vec<f64> = (0..2 * rows).map(|i| ((i * 53) % 13) as f64 - 6.0).collect();
        let mut cols = vec![0.0f64; 2 * rows];
        let mut back = vec![0.0f64; 2 * plane];
        let xv = view(&mut x, [1, 2, 1, 7, 6]);
        let bv = view(&mut back, [1, 2, 1, 7, 6]);
        for c in 0..2 {
            // SAFETY: the buffers hold 2 channels of image and columns.
            unsafe {
                unfold_plane::<f64>(&xv, 0, c, &g, cols.as_mut_ptr().add(c * rows), g.len(), &mut Vec::new());
                fold_plane::<f64>(&bv, 0, c, &g, y.as_ptr().add(c * rows), g.len(), 0.0, &mut Vec::new());
            }
        }
        let lhs: f64 = cols.iter().zip(&y).map(|(a, b)| a * b).sum();
        let rhs: f64 = x.iter().zip(&back).map(|(a, b)| a * b).sum();
        assert_eq!(lhs, rhs);
        // A column reading outside the image holds 0: kernel offset (0, 0) at column (0, 0)
        // reads image (-1, -2).
        assert_eq!(cols[0], 0.0);
        // Kernel offset (0, 1) at column (1, 0): image (2·1 − 1 + 0, 0 − 2 + 3) = (1, 1).
        assert_eq!(cols[g.len() + 4], x[6 + 1]);
    }

    #[test]
    fn unfold_and_fold_follow_the_window_at_every_row_length() {
        // Rows of 1 to 21 columns take every piece size of `copy_run` and `zero_run`; each
        // column is checked against the window's definition, and each fold against its sum.
        for w in 1..=21 {
            for (k, pad, dil) in [(3, 1, 1), (5, 2, 1), (3, 3, 2), (1, 0, 1)] {
                let cw = w + 2 * pad - dil * (k - 1);
                let g = Geometry {
                    img: [1, 2, w],
                    cols: [1, 2 + 2 * pad, cw],
                    k: [1, 1, k],
                    stride: [1; 3],
                    pad: [0, pad, pad],
                    dil: [1, 1, dil],
                };
                let mut x: Vec<f64> = (0..2 * w).map(|i| i as f64 + 1.0).collect();
                let (len, rows) = (g.len(), g.kvol() * g.len());
                let mut cols = vec![f64::NAN; rows];
                let xv = view(&mut x, [1, 1, 1, 2, w]);
                // SAFETY: the buffers hold one channel of image and columns.
                unsafe { unfold_plane::<f64>(&xv, 0, 0, &g, cols.as_mut_ptr(), len, &mut Vec::new()) };
                let mut back = vec![0.0f64; 2 * w];
                let bv = view(&mut back, [1, 1, 1, 2, w]);
                let ones = vec![1.0f64; rows];
                // SAFETY: as above.
                unsafe { fold_plane::<f64>(&bv, 0, 0, &g, ones.as_ptr(), len, 0.5, &mut Vec::new()) };
                let mut uses = vec![0.5f64; 2 * w];
                for kx in 0..k {
                    for y in 0..g.cols[1] {
                        for c in 0..cw {
                            let (iy, ix) = (y as isize - pad as isize, (c + kx * dil) as isize - pad as isize);
                            let inside = (0..2).contains(&iy) && (0..w as isize).contains(&ix);
                            let want = if inside { x[iy as usize * w + ix as usize] } else { 0.0 };
                            assert_eq!(cols[kx * len + y * cw + c], want, "w {w} k {k} pad {pad} dil {dil}");
                            if inside {
                                uses[iy as usize * w + ix as usize] += 1.0;
                            }
                        }
                    }
                }
                assert_eq!(back, uses, "w {w} k {k} pad {pad} dil {dil}");
            }
        }
    }

    #[test]
    fn the_padded_unfold_and_fold_equal_the_general_ones() {
        // Windows of column stride 1 over images read in place and transposed (row stride 1).
        let mut cases = 0;
        for (h, w) in [(1, 1), (3, 5), (7, 4), (9, 9)] {
            for (k, pad, dil, sh) in
                [(1, 0, 1, 1), (3, 1, 1, 1), (3, 1, 1, 2), (2, 3, 2, 1), (4, 0, 1, 3), (3, 2, 3, 2)]
            {
                let span = |size: usize| (size + 2 * pad).checked_sub(dil * (k - 1) + 1);
                let (Some(rh), Some(rw)) = (span(h), span(w)) else { continue };
                let g = Geometry {
                    img: [1, h, w],
                    cols: [1, rh / sh + 1, rw + 1],
                    k: [1, k, k],
                    stride: [1, sh, 1],
                    pad: [0, pad, pad],
                    dil: [1, dil, dil],
                };
                let mut x: Vec<f64> = (0..h * w).map(|i| i as f64 + 1.0).collect();
                for transposed in [false, true] {
                    let mut v = view(&mut x, [1, 1, 1, h, w]);
                    if transposed {
                        v.st[3..].copy_from_slice(&[1, h as isize]);
                    }
                    let rows = g.kvol() * g.len();
                    let (mut fast, mut slow) = (vec![f64::NAN; rows], vec![f64::NAN; rows]);
                    // SAFETY: the buffers hold one channel of image and columns.
                    unsafe {
                        unfold_plane_padded::<f64>(&v, 0, 0, &g, fast.as_mut_ptr(), g.len(), &mut Vec::new());
                        unfold_plane_general::<f64>(&v, 0, 0, &g, slow.as_mut_ptr(), g.len());
                    }
                    assert_eq!(fast, slow, "{g:?} transposed {transposed}");
                    // The fold, from columns of distinct values onto a starting value.
                    let cols: Vec<f64> = (0..rows).map(|i| ((i * 7919) % 101) as f64 * 0.25).collect();
                    let (mut a, mut b) = (vec![f64::NAN; h * w], vec![f64::NAN; h * w]);
                    let (mut av, mut bv) = (view(&mut a, [1, 1, 1, h, w]), view(&mut b, [1, 1, 1, h, w]));
                    if transposed {
                        av.st[3..].copy_from_slice(&[1, h as isize]);
                        bv.st[3..].copy_from_slice(&[1, h as isize]);
                    }
                    // SAFETY: as above.
                    unsafe {
                        fold_plane_padded::<f64>(&av, 0, 0, &g, cols.as_ptr(), g.len(), 0.125, &mut Vec::new());
                        fold_plane_general::<f64>(&bv, 0, 0, &g, cols.as_ptr(), g.len(), 0.125);
                    }
                    assert_eq!(a, b, "fold {g:?} transposed {transposed}");
                    cases += 1;
                }
            }
        }
        assert!(cases >= 30, "{cases}");
    }

    #[test]
    fn a_window_padded_in_depth_takes_the_general_loops() {
        // One slice of depth padded by 1 on each side: 3 column positions along depth, the
        // outer two reading only padding. The dispatching unfold and fold must fill and sum all
        // of them, as the general loops do.
        let g = Geometry { img: [1, 4, 5], cols: [3, 4, 5], k: [1, 3, 3], stride: [1; 3], pad: [1, 1, 1], dil: [1; 3] };
        assert!(!pads(&g));
        // Strided in depth past the padding, the one column position reads only padding.
        let strided = Geometry { cols: [1, 4, 5], stride: [3, 1, 1], ..g };
        assert!(!pads(&strided));
        let mut x: Vec<f64> = (0..20).map(|i| i as f64 + 1.0).collect();
        let v = view(&mut x, [1, 1, 1, 4, 5]);
        let mut cols = vec![f64::NAN; strided.kvol() * strided.len()];
        // SAFETY: the buffers hold one channel of image and columns.
        unsafe { unfold_plane::<f64>(&v, 0, 0, &strided, cols.as_mut_ptr(), strided.len(), &mut Vec::new()) };
        assert!(cols.iter().all(|&c| c == 0.0));
        let mut x: Vec<f64> = (0..20).map(|i| i as f64 - 7.5).collect();
        let v = view(&mut x, [1, 1, 1, 4, 5]);
        let rows = g.kvol() * g.len();
        let (mut got, mut want) = (vec![f64::NAN; rows], vec![f64::NAN; rows]);
        // SAFETY: the buffers hold one channel of image and columns.
        unsafe {
            unfold_plane::<f64>(&v, 0, 0, &g, got.as_mut_ptr(), g.len(), &mut Vec::new());
            unfold_plane_general::<f64>(&v, 0, 0, &g, want.as_mut_ptr(), g.len());
        }
        assert_eq!(got, want);
        assert!(got[..20].iter().all(|&c| c == 0.0), "the first depth position reads padding");
        let cols: Vec<f64> = (0..rows).map(|i| (i % 13) as f64).collect();
        let (mut a, mut b) = (vec![f64::NAN; 20], vec![f64::NAN; 20]);
        let (av, bv) = (view(&mut a, [1, 1, 1, 4, 5]), view(&mut b, [1, 1, 1, 4, 5]));
        // SAFETY: as above.
        unsafe {
            fold_plane::<f64>(&av, 0, 0, &g, cols.as_ptr(), g.len(), 0.0, &mut Vec::new());
            fold_plane_general::<f64>(&bv, 0, 0, &g, cols.as_ptr(), g.len(), 0.0);
        }
        assert_eq!(a, b);
    }

    #[test]
    fn ranges_keep_positions_inside_the_image() {
        let g = Geometry {
            img: [1, 1, 5],
            cols: [1, 1, 9],
            k: [1, 1, 3],
            stride: [1, 1, 1],
            pad: [0, 0, 4],
            dil: [1, 1, 2],
        };
        for k in 0..3 {
            let (lo, hi, off) = g.range(2, k);
            for x in 0..9 {
                let inside = (0..5).contains(&(x as isize + off));
                assert_eq!((lo..hi).contains(&x), inside, "k={k} x={x}");
            }
        }
    }
}
