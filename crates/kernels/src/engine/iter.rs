//! The loop nest of a kernel call (ATen's TensorIterator, `aten/src/ATen/TensorIterator.cpp`, is
//! the model): operands as (pointer, sizes, strides, dtype), broadcast, dimensions sorted by stride
//! and coalesced, walked as (pointers, strides, length) runs — one run for contiguous tensors —
//! split across threads for large work. [`crate::engine::operands`] builds one from a
//! kernel's tensors (promotion, conversion, outputs); the loops that run over it are in
//! [`crate::engine::loops`].

// Broadcasting and contiguous strides are regen-runtime's (the bootstrap kernels use them too).
pub use regen_runtime::view::{broadcast_shapes, contiguous_strides, is_contiguous};
use regen_runtime::{Result, Scalar, TensorRef};
use smallvec::SmallVec;

use crate::engine::dtype::{DType, Element};

/// Work smaller than this many elements runs on one thread: ATen's `GRAIN_SIZE`. The work is
/// split on the runtime's pool (`regen_runtime::host::parallel_for`, `regen_runtime::pool`), whose
/// workers spin between loops as OpenMP's do, so a loop of this size pays for waking them.
pub const GRAIN: usize = 32768;

/// Per-dimension values, inline up to 6 dimensions (no allocation per kernel call).
pub type Dims<T> = SmallVec<[T; 6]>;
/// Per-operand values, inline up to 4 operands.
pub type PerOperand<T> = SmallVec<[T; 4]>;

/// A tensor as the iterator sees it: where element 0 is, its geometry in elements, its dtype.
#[derive(Debug, Clone)]
pub struct Operand {
    pub data: *mut u8,
    pub dtype: DType,
    pub sizes: Dims<i64>,
    pub strides: Dims<i64>,
}

// SAFETY: an operand describes tensor memory kept alive by the kernel call that built it; the
// loops write disjoint output elements from different threads.
unsafe impl Send for Operand {}
// SAFETY: shared by the loops' threads, which read its (live) inputs and write disjoint output
// elements.
unsafe impl Sync for Operand {}

impl Operand {
    pub fn of(t: &TensorRef<'_>) -> Result<Operand> {
        Ok(Operand {
            data: t.data_ptr().cast(),
            dtype: DType::from_scalar_type(t.dtype())?,
            sizes: Dims::from_slice(t.sizes()),
            strides: Dims::from_slice(t.strides()),
        })
    }
    pub fn numel(&self) -> usize {
        self.sizes.iter().product::<i64>().max(0) as usize
    }
}

/// The loop nest of one kernel call, after broadcasting, reordering and coalescing: dimension 0
/// is the fastest. Operand 0.. are the outputs, then the inputs.
pub struct Iter {
    shape: Dims<usize>,
    /// Per operand, per dimension, in bytes.
    strides: PerOperand<Dims<isize>>,
    ptrs: PerOperand<*mut u8>,
    numel: usize,
}

// SAFETY: as for Operand: its pointers address tensor memory kept alive by the kernel call.
unsafe impl Send for Iter {}
// SAFETY: as for Operand: the threads sharing it write disjoint output elements.
unsafe impl Sync for Iter {}

impl Iter {
    /// Builds the loop nest of `outputs` and `inputs` broadcast to `shape` (every operand's
    /// dtype is taken as it is: conversions are the caller's, see [`crate::engine::operands`]).
    pub fn new(outputs: &[Operand], inputs: &[Operand], shape: &[i64]) -> Iter {
        let operands: PerOperand<&Operand> = outputs.iter().chain(inputs).collect();
        Iter::of(&operands, shape)
    }

    /// [`Iter::new`] of operands gathered by reference (the outputs first, then the inputs).
    pub fn of(operands: &[&Operand], shape: &[i64]) -> Iter {
        // The common case first: every operand contiguous in the full shape, or a single element
        // broadcast (`x + 1`), is one run, with nothing to reorder or coalesce.
        let numel = shape.iter().product::<i64>().max(0) as usize;
        let scalar = |o: &Operand| o.sizes.iter().all(|&s| s == 1) && o.sizes.len() <= shape.len();
        let full = |o: &Operand| o.sizes.as_slice() == shape && is_contiguous(&o.sizes, &o.strides);
        if operands.iter().all(|o| full(o) || scalar(o)) && full(operands[0]) {
            return Iter {
                shape: smallvec::smallvec![numel.max(1)],
                strides: operands
                    .iter()
                    .map(|o| smallvec::smallvec![if full(o) { o.dtype.size() as isize } else { 0 }])
                    .collect(),
                ptrs: operands.iter().map(|o| o.data).collect(),
                numel,
            };
        }
        let ndim = shape.len();
        // Byte strides in the broadcast shape, innermost dimension first.
        let mut strides: PerOperand<Dims<isize>> = operands
            .iter()
            .map(|o| {
                let elem = o.dtype.size() as isize;
                (0..ndim)
                    .rev()
                    .map(|d| {
                        let k = d as isize - (ndim - o.sizes.len()) as isize;
                        if k < 0 || o.sizes[k as usize] == 1 && shape[d] != 1 {
                            0
                        } else {
                            o.strides[k as usize] as isize * elem
                        }
                    })
                    .collect()
            })
            .collect();
        let mut sizes: Dims<usize> = shape.iter().rev().map(|&s| s.max(0) as usize).collect();
        // Reorder: sort dimensions so that the first operand with a non-zero stride walks memory
        // forwards fastest (ATen's reorder_dimensions: an insertion sort, stable for ties).
        let mut perm: Dims<usize> = (0..ndim).collect();
        for i in 1..ndim {
            let mut j = i;
            while j > 0 && should_swap(&strides, perm[j - 1], perm[j]) {
                perm.swap(j - 1, j);
                j -= 1;
            }
        }
        sizes = perm.iter().map(|&d| sizes[d]).collect();
        for s in &mut strides {
            *s = perm.iter().map(|&d| s[d]).collect();
        }
        // Coalesce: merge dimension d+1 into d where every operand steps through both as one.
        let mut shape_out: Dims<usize> = Dims::new();
        let mut strides_out: PerOperand<Dims<isize>> = (0..strides.len()).map(|_| Dims::new()).collect();
        for d in 0..ndim {
            if sizes[d] == 1 {
                continue;
            }
            if let Some(last) = shape_out.len().checked_sub(1) {
                let mergeable =
                    strides.iter().zip(&strides_out).all(|(s, so)| so[last] * shape_out[last] as isize == s[d]);
                if mergeable {
                    shape_out[last] *= sizes[d];
                    continue;
                }
            }
            shape_out.push(sizes[d]);
            for (so, s) in strides_out.iter_mut().zip(&strides) {
                so.push(s[d]);
            }
        }
        let numel = if sizes.contains(&0) { 0 } else { shape_out.iter().product() };
        if shape_out.is_empty() {
            shape_out.push(1);
            for so in &mut strides_out {
                so.push(0);
            }
        }
        Iter { shape: shape_out, strides: strides_out, ptrs: operands.iter().map(|o| o.data).collect(), numel }
    }

    pub fn numel(&self) -> usize {
        self.numel
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// The coalesced shape, fastest dimension first (for tests and loops that need it).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The byte strides of operand `k`, fastest dimension first.
    pub fn strides(&self, k: usize) -> &[isize] {
        &self.strides[k]
    }

    /// Calls `f(pointers, inner byte strides, n)` for runs of `n` elements along dimension 0
    /// covering every element once; runs go to several threads when the work is large.
    pub fn for_each<F>(&self, f: F)
    where
        F: Fn(&[*mut u8], &[isize], usize) + Sync,
    {
        if self.numel == 0 {
            return;
        }
        if self.numel < GRAIN || regen_runtime::host::num_threads() < 2 {
            return self.run(0, self.numel, &f);
        }
        regen_runtime::host::parallel_for(self.numel, GRAIN, |start, end| self.run(start, end, &f));
    }

    /// Runs elements `start..end` in linear (dimension 0 fastest) order.
    fn run<F>(&self, start: usize, end: usize, f: &F)
    where
        F: Fn(&[*mut u8], &[isize], usize),
    {
        let ndim = self.shape.len();
        if ndim == 1 {
            let ptrs: PerOperand<*mut u8> = self
                .ptrs
                .iter()
                .zip(&self.strides)
                // SAFETY: `start` is inside the one dimension.
                .map(|(&p, s)| unsafe { p.offset(start as isize * s[0]) })
                .collect();
            let inner: PerOperand<isize> = self.strides.iter().map(|s| s[0]).collect();
            return f(&ptrs, &inner, end - start);
        }
        let nops = self.ptrs.len();
        let mut rest = start;
        let mut index: Dims<usize> = self
            .shape
            .iter()
            .map(|&size| {
                let i = rest % size;
                rest /= size;
                i
            })
            .collect();
        let inner: PerOperand<isize> = self.strides.iter().map(|s| s[0]).collect();
        let mut ptrs: PerOperand<*mut u8> = smallvec::smallvec![std::ptr::null_mut::<u8>(); nops];
        let mut pos = start;
        while pos < end {
            for (k, p) in ptrs.iter_mut().enumerate() {
                let offset: isize = (0..ndim).map(|d| index[d] as isize * self.strides[k][d]).sum();
                // SAFETY: the index is inside the shape, so the offset is inside the operand.
                *p = unsafe { self.ptrs[k].offset(offset) };
            }
            let n = (self.shape[0] - index[0]).min(end - pos);
            f(&ptrs, &inner, n);
            pos += n;
            index[0] += n;
            // Carry into the outer dimensions.
            let mut d = 0;
            while d + 1 < ndim && index[d] == self.shape[d] {
                index[d] = 0;
                index[d + 1] += 1;
                d += 1;
            }
        }
    }
}

fn should_swap(strides: &[Dims<isize>], a: usize, b: usize) -> bool {
    // Is dimension `a` (currently inner) to go outside `b`? Decided by the first operand whose
    // strides in the two differ and are both non-zero (ATen also skips zero strides).
    for s in strides {
        let (sa, sb) = (s[a], s[b]);
        if sa == 0 || sb == 0 {
            continue;
        }
        if sa != sb {
            return sa.abs() > sb.abs();
        }
    }
    false
}

/// A new contiguous tensor on the device.
pub fn new_tensor(sizes: &[i64], dtype: DType) -> Result<regen_runtime::Tensor> {
    regen_runtime::host::empty_strided(sizes, &contiguous_strides(sizes), dtype.code())
}

/// PyTorch's `maybe_wrap_dim`: a 0-dim tensor is taken as 1-dim (accepts dims -1 and 0).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = (ndim as i64).max(1);
    let wrapped = if dim < 0 { dim + n } else { dim };
    if !(0..n).contains(&wrapped) {
        return Err(regen_runtime::Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(wrapped as usize)
}

/// Sizes as ATen prints them in messages: `[2, 3]`.
pub fn fmt_sizes(s: &[i64]) -> String {
    format!("[{}]", s.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
}

/// A scalar of `dtype` from a kernel's Scalar argument.
pub fn scalar_as<T: Element>(s: Scalar) -> T {
    T::from_num(crate::engine::dtype::Num::from_scalar(s))
}

/// Test operands over a slice.
#[cfg(test)]
impl Operand {
    pub fn over<T>(data: &mut [T], sizes: &[i64], strides: &[i64], dtype: DType) -> Operand {
        Operand {
            data: data.as_mut_ptr().cast(),
            dtype,
            sizes: Dims::from_slice(sizes),
            strides: Dims::from_slice(strides),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_operands_coalesce_into_one_run() {
        let (mut a, mut b, mut o) = (vec![0f32; 24], vec![0f32; 24], vec![0f32; 24]);
        let s = [2, 3, 4];
        let st = contiguous_strides(&s);
        let it = Iter::new(
            &[Operand::over(&mut o, &s, &st, DType::F32)],
            &[Operand::over(&mut a, &s, &st, DType::F32), Operand::over(&mut b, &s, &st, DType::F32)],
            &s,
        );
        assert_eq!(it.shape(), &[24]);
        assert_eq!(it.strides(1), &[4]);
    }

    #[test]
    fn broadcast_rows_keep_a_contiguous_inner_dimension() {
        // [3, 4] * [4]: the row vector steps with the matrix inside, stays put outside.
        let (mut a, mut b, mut o) = (vec![0f32; 12], vec![0f32; 4], vec![0f32; 12]);
        let it = Iter::new(
            &[Operand::over(&mut o, &[3, 4], &[4, 1], DType::F32)],
            &[Operand::over(&mut a, &[3, 4], &[4, 1], DType::F32), Operand::over(&mut b, &[4], &[1], DType::F32)],
            &[3, 4],
        );
        assert_eq!(it.shape(), &[4, 3]);
        assert_eq!(it.strides(2), &[4, 0]);
    }

    #[test]
    fn transposed_inputs_are_walked_in_memory_order() {
        // Output transposed in memory: the loop follows the output's fastest dimension.
        let (mut a, mut o) = (vec![0f64; 6], vec![0f64; 6]);
        let it = Iter::new(
            &[Operand::over(&mut o, &[2, 3], &[1, 2], DType::F64)],
            &[Operand::over(&mut a, &[2, 3], &[1, 2], DType::F64)],
            &[2, 3],
        );
        assert_eq!(it.shape(), &[6]);
        assert_eq!(it.strides(0), &[8]);
    }
}
