//! Reused buffers of the contact layer (design.md §7: no heap allocation in a step once the workspace is
//! built). A matrix whose shape follows the number of contacts keeps its storage: it is reshaped within its
//! capacity, and grows (allocates) only when a step has more contacts than any before.
use nalgebra::DMatrix;
use torsion_math::Scalar;

/// `m` ← an r × c zero matrix, reusing `m`'s storage (allocates only when r·c exceeds every earlier size).
pub fn reshape_zeroed<T: Scalar>(m: &mut DMatrix<T>, r: usize, c: usize) {
    if m.shape() == (r, c) {
        // (over the contiguous storage: nalgebra's `fill` walks it by (row, column) index)
        m.as_mut_slice().fill(T::zero());
        return;
    }
    let old = std::mem::replace(m, DMatrix::from_vec(0, 0, Vec::new()));
    let mut data: Vec<T> = old.data.into();
    data.clear();
    data.resize(r * c, T::zero());
    *m = DMatrix::from_vec(r, c, data);
}

/// `dst` ← `src` (shape and entries), reusing `dst`'s storage as [`reshape_zeroed`].
pub fn copy_matrix<T: Scalar>(dst: &mut DMatrix<T>, src: &DMatrix<T>) {
    if dst.shape() != src.shape() {
        reshape_zeroed(dst, src.nrows(), src.ncols());
    }
    dst.copy_from(src);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_keeps_the_storage_and_zeroes() {
        let mut m = DMatrix::from_element(3, 4, 1.0);
        let p = m.as_ptr();
        reshape_zeroed(&mut m, 2, 5);
        assert_eq!(m.shape(), (2, 5));
        assert!(m.iter().all(|&x| x == 0.0));
        assert_eq!(m.as_ptr(), p, "10 ≤ 12 entries: the same storage");
        let src = DMatrix::from_fn(1, 3, |_, j| j as f64);
        copy_matrix(&mut m, &src);
        assert_eq!(m, src);
        assert_eq!(m.as_ptr(), p);
    }
}
