//! Broad phase: one world AABB per bounded shape per `detect`, then sweep-and-prune along the axis in which the
//! AABB centres spread most. The sort keeps the previous call's order (Rust's merge sort is adaptive, so a coherent
//! scene re-sorts in ~O(n)); the sweep then costs O(n + overlaps along the axis). Unbounded shapes (planes) are
//! not in the sweep: the world tests them against every bounded shape with an AABB–half-space check, O(n · planes).
//! [`BroadPhase::AllPairs`] is the naive O(n²) reference, kept for tests and the benchmark.

/// Broad-phase algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BroadPhase {
    /// sweep-and-prune on the axis of largest spread (default)
    #[default]
    SweepAndPrune,
    /// every pair of bounded shapes (reference; O(n²))
    AllPairs,
}

/// An axis-aligned box, world, m.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    pub min: [f64; 3],
    pub max: [f64; 3],
}

impl Aabb {
    #[inline]
    pub fn overlaps(&self, o: &Aabb) -> bool {
        (0..3).all(|k| self.min[k] <= o.max[k] && o.min[k] <= self.max[k])
    }
}

/// Sweep-and-prune state kept between calls (the sorted order).
#[derive(Clone, Debug, Default)]
pub struct SweepAndPrune {
    order: Vec<usize>,
}

impl SweepAndPrune {
    /// Overlapping pairs (i, j), i < j, among `boxes` (indices into `boxes`) accepted by `keep`, appended to `out`.
    pub fn pairs(
        &mut self,
        kind: BroadPhase,
        boxes: &[Aabb],
        mut keep: impl FnMut(usize, usize) -> bool,
        out: &mut Vec<(usize, usize)>,
    ) {
        let n = boxes.len();
        if kind == BroadPhase::AllPairs {
            for i in 0..n {
                for j in i + 1..n {
                    if boxes[i].overlaps(&boxes[j]) && keep(i, j) {
                        out.push((i, j));
                    }
                }
            }
            return;
        }
        // axis of largest centre variance
        let mut mean = [0.0; 3];
        let mut sq = [0.0; 3];
        for b in boxes {
            for k in 0..3 {
                let c = 0.5 * (b.min[k] + b.max[k]);
                mean[k] += c;
                sq[k] += c * c;
            }
        }
        let nf = n.max(1) as f64;
        let var = |k: usize| sq[k] / nf - (mean[k] / nf).powi(2);
        let axis = (0..3).fold(0, |a, k| if var(k) > var(a) { k } else { a });
        if self.order.len() != n {
            self.order = (0..n).collect();
        }
        self.order.sort_by(|&a, &b| boxes[a].min[axis].total_cmp(&boxes[b].min[axis]));
        for (s, &i) in self.order.iter().enumerate() {
            let hi = boxes[i].max[axis];
            for &j in &self.order[s + 1..] {
                if boxes[j].min[axis] > hi {
                    break;
                }
                if boxes[i].overlaps(&boxes[j]) {
                    let (a, b) = if i < j { (i, j) } else { (j, i) };
                    if keep(a, b) {
                        out.push((a, b));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_matches_all_pairs() {
        // a deterministic jumble of boxes of various sizes
        let mut s = 12345u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let boxes: Vec<Aabb> = (0..300)
            .map(|_| {
                let c = [rnd() * 10.0, rnd() * 10.0, rnd() * 2.0];
                let h = rnd() * 0.5;
                Aabb { min: [c[0] - h, c[1] - h, c[2] - h], max: [c[0] + h, c[1] + h, c[2] + h] }
            })
            .collect();
        let mut sap = SweepAndPrune::default();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        sap.pairs(BroadPhase::SweepAndPrune, &boxes, |_, _| true, &mut a);
        sap.pairs(BroadPhase::AllPairs, &boxes, |_, _| true, &mut b);
        a.sort();
        assert!(!a.is_empty());
        assert_eq!(a, b);
        // the filter is applied
        let mut c = Vec::new();
        sap.pairs(BroadPhase::SweepAndPrune, &boxes, |i, _| i % 2 == 0, &mut c);
        assert!(c.len() < a.len() && c.iter().all(|p| p.0 % 2 == 0));
    }
}
