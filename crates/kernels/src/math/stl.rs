//! The unstable sorting algorithms PyTorch's CPU kernels call, step for step, so that equal
//! elements end in CPU's order: torch wheels are built with GCC, and ATen's sort (`stable=False`),
//! topk and mode call libstdc++'s `std::sort` (introsort: median-of-three pivot moved to the
//! front, 16-element threshold, depth limit 2·⌊log₂ n⌋, heap sort past it, a final insertion
//! sort), `std::nth_element` (introselect) and `std::partial_sort` (heap select, then heap sort);
//! kthvalue calls ATen's own `quick_select_template` (Sedgewick's partition). Which of two equal
//! elements comes first depends on every comparison and swap these make, so each function does
//! the same ones, generic over the element and a comparator that sees what CPU's sees.
//!
//! The C++ scans run unguarded, relying on sentinels that a strict weak order guarantees; here
//! each scan also stops at the slice's ends, which changes nothing for such orders and keeps a
//! comparator that is not one (mode's `<` with NaN) from reading outside the slice.

/// Runs shorter than this are left to the final insertion sort (libstdc++'s `_S_threshold`).
const THRESHOLD: usize = 16;

/// ⌊log₂ n⌋ for n > 0 (`std::__lg`).
fn lg(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}

/// `std::sort(v, less)`.
pub fn sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    if v.is_empty() {
        return;
    }
    introsort_loop(v, 2 * lg(v.len()), less);
    final_insertion_sort(v, less);
}

/// `std::nth_element(v, v + nth, v + len, less)`.
pub fn nth_element<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], nth: usize, less: &mut F) {
    if nth >= v.len() {
        return;
    }
    let mut depth = 2 * lg(v.len());
    let (mut lo, mut hi) = (0, v.len());
    while hi - lo > 3 {
        if depth == 0 {
            heap_select(&mut v[lo..hi], nth - lo + 1, less);
            // The heap's top is the largest of the smallest nth - lo + 1: the nth.
            v.swap(lo, nth);
            return;
        }
        depth -= 1;
        let cut = lo + partition_pivot(&mut v[lo..hi], less);
        if cut <= nth {
            lo = cut;
        } else {
            hi = cut;
        }
    }
    insertion_sort(&mut v[lo..hi], less);
}

/// `std::partial_sort(v, v + middle, v + len, less)`.
pub fn partial_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], middle: usize, less: &mut F) {
    let middle = middle.min(v.len());
    heap_select(v, middle, less);
    sort_heap(&mut v[..middle], less);
}

/// ATen's `quick_select_template(v, k, greater, swap)`: `v[k]` becomes the k-th smallest.
pub fn quick_select<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], k: usize, greater: &mut F) {
    if v.len() < 2 {
        return;
    }
    let (mut l, mut r) = (0usize, v.len() - 1);
    loop {
        if r <= l {
            return;
        }
        if r == l + 1 {
            if greater(&v[l], &v[r]) {
                v.swap(l, r);
            }
            return;
        }
        // Median of three, placed at l, with the largest at r and the smallest at l + 1.
        v.swap((l + r) >> 1, l + 1);
        if greater(&v[l + 1], &v[r]) {
            v.swap(l + 1, r);
        }
        if greater(&v[l], &v[r]) {
            v.swap(l, r);
        }
        if greater(&v[l + 1], &v[l]) {
            v.swap(l + 1, l);
        }
        let (mut i, mut j) = (l + 1, r);
        let pivot = v[l];
        loop {
            i += 1;
            while i < r && greater(&pivot, &v[i]) {
                i += 1;
            }
            j -= 1;
            while j > l && greater(&v[j], &pivot) {
                j -= 1;
            }
            if j < i {
                break;
            }
            v.swap(i, j);
        }
        v.swap(l, j);
        if j <= k {
            l = i;
        }
        if j >= k {
            // ATen's signed j - 1 is -1 only when j = l = k, and then l = i > 0 ends the loop
            // as 0 does.
            r = j.saturating_sub(1);
        }
    }
}

fn introsort_loop<T: Copy, F: FnMut(&T, &T) -> bool>(mut v: &mut [T], mut depth: usize, less: &mut F) {
    while v.len() > THRESHOLD {
        if depth == 0 {
            let n = v.len();
            partial_sort(v, n, less);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, less);
        let (left, right) = v.split_at_mut(cut);
        introsort_loop(right, depth, less);
        v = left;
    }
}

fn final_insertion_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    if v.len() > THRESHOLD {
        insertion_sort(&mut v[..THRESHOLD], less);
        // The first THRESHOLD elements hold the smallest, so each insertion stops before the
        // front (`__unguarded_insertion_sort`).
        for i in THRESHOLD..v.len() {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, less);
    }
}

fn insertion_sort<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    for i in 1..v.len() {
        if less(&v[i], &v[0]) {
            let x = v[i];
            v.copy_within(0..i, 1);
            v[0] = x;
        } else {
            linear_insert(v, i, less);
        }
    }
}

/// Moves v[i] down past the elements greater than it (`__unguarded_linear_insert`).
fn linear_insert<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut i: usize, less: &mut F) {
    let x = v[i];
    let p = v.as_mut_ptr();
    // SAFETY: i < v.len() (v[i] above) and only decreases, staying above 0 where i - 1 is read.
    // (Unchecked: the sorts spend most of their time in this loop and the partition's.)
    unsafe {
        while i > 0 && less(&x, &*p.add(i - 1)) {
            *p.add(i) = *p.add(i - 1);
            i -= 1;
        }
        *p.add(i) = x;
    }
}

/// Puts the median of v[1], v[n/2] and v[n-1] at v[0] and partitions v[1..] around it
/// (`__unguarded_partition_pivot`); returns the cut.
fn partition_pivot<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) -> usize {
    let n = v.len();
    let (a, b, c) = (1, n / 2, n - 1);
    let median = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(0, median);
    let (mut first, mut last) = (1, n);
    let p = v.as_mut_ptr();
    loop {
        // SAFETY: first < n is checked before each read; last is n - 1 after the first
        // decrement and only decreases, staying ≥ 0 (the loop goes on only while last > first).
        // v is used only through p from here on.
        unsafe {
            while first < n && less(&*p.add(first), &*p) {
                first += 1;
            }
            last -= 1;
            while last > 0 && less(&*p, &*p.add(last)) {
                last -= 1;
            }
            if first >= last {
                return first;
            }
            std::ptr::swap(p.add(first), p.add(last));
        }
        first += 1;
    }
}

/// Makes v[..middle] a max-heap of the `middle` smallest elements (`__heap_select`).
fn heap_select<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], middle: usize, less: &mut F) {
    if middle == 0 {
        return;
    }
    make_heap(&mut v[..middle], less);
    for i in middle..v.len() {
        if less(&v[i], &v[0]) {
            // `__pop_heap(first, middle, i)`: the top goes to i, v[i] into the heap.
            let x = v[i];
            v[i] = v[0];
            adjust_heap(&mut v[..middle], 0, x, less);
        }
    }
}

fn make_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut parent = (n - 2) / 2;
    loop {
        let x = v[parent];
        adjust_heap(v, parent, x, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

fn sort_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: &mut F) {
    let mut last = v.len();
    while last > 1 {
        last -= 1;
        let x = v[last];
        v[last] = v[0];
        adjust_heap(&mut v[..last], 0, x, less);
    }
}

/// Fills the hole at `hole` of the heap `v` with `x`: down to a leaf along the larger children,
/// then `x` back up (`__adjust_heap` and `__push_heap`).
fn adjust_heap<T: Copy, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut hole: usize, x: T, less: &mut F) {
    let len = v.len();
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(&v[child], &v[child - 1]) {
            child -= 1;
        }
        v[hole] = v[child];
        hole = child;
    }
    if len & 1 == 0 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[hole] = v[child - 1];
        hole = child - 1;
    }
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(&v[parent], &x) {
            break;
        }
        v[hole] = v[parent];
        hole = parent;
    }
    v[hole] = x;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so the tests need no crate.
    fn values(n: usize, range: u64, seed: u64) -> Vec<(u64, usize)> {
        let mut s = seed | 1;
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % range, i)
            })
            .collect()
    }

    #[test]
    fn sort_orders_and_permutes() {
        for n in [0, 1, 2, 3, 16, 17, 100, 1000, 5000] {
            for range in [1, 2, 5, 1 << 40] {
                let mut v = values(n, range, n as u64 + range);
                sort(&mut v, &mut |a, b| a.0 < b.0);
                assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
                let mut seen: Vec<usize> = v.iter().map(|p| p.1).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn selections_place_the_nth() {
        for n in [1, 2, 3, 4, 5, 17, 100, 1000] {
            for range in [2, 7, 1 << 40] {
                let base = values(n, range, 3 * n as u64 + range);
                let mut sorted: Vec<u64> = base.iter().map(|p| p.0).collect();
                sorted.sort_unstable();
                for k in [0, n / 3, n / 2, n - 1] {
                    let mut v = base.clone();
                    nth_element(&mut v, k, &mut |a, b| a.0 < b.0);
                    assert_eq!(v[k].0, sorted[k]);
                    assert!(v[..k].iter().all(|p| p.0 <= sorted[k]) && v[k..].iter().all(|p| p.0 >= sorted[k]));
                    let mut v = base.clone();
                    quick_select(&mut v, k, &mut |a, b| a.0 > b.0);
                    assert_eq!(v[k].0, sorted[k]);
                    let mut v = base.clone();
                    partial_sort(&mut v, k + 1, &mut |a, b| a.0 < b.0);
                    assert_eq!(v[..=k].iter().map(|p| p.0).collect::<Vec<_>>(), sorted[..=k]);
                }
            }
        }
    }

    #[test]
    fn equal_elements_move_as_libstdcxx_moves_them() {
        // std::sort of 100 equal elements: the first partition swaps the ends inwards
        // (what torch.zeros(100).sort(stable=False) returns on CPU).
        let mut v: Vec<(u8, usize)> = (0..100).map(|i| (0, i)).collect();
        sort(&mut v, &mut |a, b| a.0 < b.0);
        let idx: Vec<usize> = v.iter().map(|p| p.1).take(20).collect();
        assert_eq!(idx, [62, 74, 73, 72, 71, 70, 69, 68, 67, 66, 65, 64, 63, 75, 61, 60, 59, 58, 57, 56]);
    }

    #[test]
    fn ties_and_nans_order_as_gxx_sorts_them() {
        // Keys (-1 for NaN) and the index order g++ 12's std::sort gives them with CPU's sort
        // comparator (NaN greatest), which torch.unique's inverse indices show.
        let keys = [
            1, 0, -1, 2, 1, -1, 0, -1, 0, 0, 0, 3, -1, -1, 1, -1, -1, -1, 1, -1, 1, 0, 1, 3, 3, 3, 1, 1, -1, 3, 3, -1,
            0, 1, 1, 3, -1, 2, 2, 3,
        ];
        let expected = [
            1, 32, 6, 8, 9, 10, 21, 20, 34, 33, 27, 26, 22, 0, 18, 14, 4, 38, 37, 3, 39, 35, 11, 23, 24, 25, 29, 30, 5,
            36, 2, 31, 28, 15, 7, 12, 13, 19, 17, 16,
        ];
        let mut v: Vec<(f64, usize)> =
            keys.iter().map(|&k| if k < 0 { f64::NAN } else { f64::from(k) }).zip(0..).collect();
        sort(&mut v, &mut |a, b| a.0 < b.0 || (!a.0.is_nan() && b.0.is_nan()));
        assert_eq!(v.iter().map(|p| p.1).collect::<Vec<_>>(), expected);
    }
}
