//! Direct solve of one contact island on a guessed active set (issue 15 item 3; spec 001 §3.5, §3.9): every
//! contact either sticks (λ_n > 0, λ_t strictly inside its friction set, all three contact velocities u = 0) or
//! separates (λ = 0, u_n ≥ 0). On such a set the staggered fixed point solves one linear system,
//! ```text
//! G_SS λ_S = −b_S      (G_SS: the island's Delassus block over the sticking contacts, G_n, G_nt, G_t interleaved
//!                      per contact; λ = 0 off S)
//! ```
//! singular when contacts are redundant (a box's four corners on a face: rank 6 of 12). It is solved by iterated
//! Tikhonov regularisation from the warm start, λ ← λ + (G_SS + εI)⁻¹ (−b_S − G_SS λ), one Cholesky
//! factorisation over G_SS's profile (ε = 1e-9 max diag G_SS): the iteration converges to the solution nearest
//! the warm start (the redundant part of λ stays where the warm start put it), so it is deterministic in the
//! step's inputs. The set starts from the warm start (λ_n > 0: sticking) and is corrected (a sticking λ_n ≤ 0
//! released, a separating contact with u_n < 0 taken in) up to [`MAX_SETS`] times. The result is accepted only
//! when it satisfies the NCP to the passes' own stop (the NCP residual ≤ `residual_tolerance` (1 + max |b_n|)):
//! it is then the staggered passes' fixed point, differentiated as such (`NcpGradient::Auto`: the fixed point's
//! derivative).
//! Otherwise — a sliding contact (λ_t on the boundary), a set not found in [`MAX_SETS`] tries, a residual left —
//! the island runs the ADMM passes from the same warm start, and the rejection is reported
//! (`NcpReport::direct_rejected`, `StepInfo::fallbacks`).
use super::sets::{friction_gauge, FrictionSet};
use crate::contact::ContactFrame;
use nalgebra::DMatrix;
use torsion_math::linalg::{profile_cholesky, profile_solve};

/// Active sets tried per solve (each one factorisation).
const MAX_SETS: usize = 3;
/// Refinements per set (each: G_SS λ_S and two triangular solves).
const MAX_REFINE: usize = 12;
/// The Tikhonov shift ε relative to G_SS's largest diagonal entry: small enough that the refinement converges in
/// a few steps (rate ε / σ per step for G's singular values σ), large enough above round-off (1e-16) that the
/// shifted matrix factorises.
const EPS_REL: f64 = 1e-9;
/// A sticking contact's friction impulse must lie this far (relative) inside its set (as `tangent.rs`'s
/// `may_stick`): on the boundary the contact may slide, which this solve does not model.
const STICK_MARGIN: f64 = 1e-6;

/// The island's Delassus blocks G_n (m × m), G_t (2m × 2m), G_nt (m × 2m).
pub(crate) type Blocks<'a> = (&'a DMatrix<f64>, &'a DMatrix<f64>, &'a DMatrix<f64>);

/// One island's problem for the direct solve: its blocks, offsets and warm start in its own contact order.
pub(crate) struct DirectProblem<'a> {
    pub g: Blocks<'a>,
    /// the island's contacts (indices into `contacts`)
    pub idx: &'a [usize],
    pub contacts: &'a [ContactFrame],
    pub bn: &'a [f64],
    pub bt: &'a [f64],
    pub ln_warm: &'a [f64],
    pub lt_warm: &'a [f64],
    pub kind: FrictionSet,
    /// the accepted NCP residual (m/s)
    pub tol: f64,
}

/// What a direct solve did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Direct {
    /// the NCP holds to `tol` at (`DirectSolve::ln`, `lt`): its residual, sets tried, refinements made
    Solved { residual: f64, sets: usize, refinements: usize },
    /// no solution of the NCP on a sticking / separating set was found (`sets` factorisations spent)
    Rejected { sets: usize },
}

/// The direct solve's buffers (reused from step to step; nothing carried over: every solve starts from its
/// problem's warm start).
#[derive(Default)]
pub(crate) struct DirectSolve {
    stick: Vec<bool>,
    /// the sticking contacts (island order), 3 unknowns each
    set: Vec<usize>,
    /// G_SS, G_SS + εI and its factor, b_S, the profile of the factor
    gss: Vec<f64>,
    k: Vec<f64>,
    bs: Vec<f64>,
    first: Vec<usize>,
    /// λ_S, the residual / correction, the last correction
    x: Vec<f64>,
    d: Vec<f64>,
    step: Vec<f64>,
    /// the result: the island's impulses and contact velocities u = G λ + b (3 per contact: n, t1, t2)
    pub ln: Vec<f64>,
    pub lt: Vec<f64>,
    u: Vec<f64>,
}

/// G_SS's entry (contact a, component p; contact b, component q); component 0 normal, 1 and 2 the tangents.
#[inline]
fn entry(g: Blocks, a: usize, p: usize, b: usize, q: usize) -> f64 {
    let (gn, gt, gnt) = g;
    match (p, q) {
        (0, 0) => gn[(a, b)],
        (0, q) => gnt[(a, 2 * b + q - 1)],
        (p, 0) => gnt[(b, 2 * a + p - 1)],
        (p, q) => gt[(2 * a + p - 1, 2 * b + q - 1)],
    }
}

impl DirectSolve {
    /// u = G λ + b for every contact of the island at (`ln`, `lt`).
    fn velocities(&mut self, pb: &DirectProblem) {
        let (gn, gt, gnt) = pb.g;
        let m = pb.idx.len();
        let (ln, lt) = (&self.ln, &self.lt);
        self.u.clear();
        for a in 0..m {
            let un = pb.bn[a]
                + (0..m).map(|b| gn[(a, b)] * ln[b]).sum::<f64>()
                + (0..2 * m).map(|k| gnt[(a, k)] * lt[k]).sum::<f64>();
            self.u.push(un);
            for t in 0..2 {
                let k = 2 * a + t;
                let ut = pb.bt[k]
                    + (0..m).map(|b| gnt[(b, k)] * ln[b]).sum::<f64>()
                    + (0..2 * m).map(|l| gt[(k, l)] * lt[l]).sum::<f64>();
                self.u.push(ut);
            }
        }
    }

    /// `x` (3 per sticking contact) into the island's impulses (0 off the set).
    fn scatter(&mut self) {
        self.ln.iter_mut().for_each(|v| *v = 0.0);
        self.lt.iter_mut().for_each(|v| *v = 0.0);
        for (s, &a) in self.set.iter().enumerate() {
            self.ln[a] = self.x[3 * s];
            self.lt[2 * a] = self.x[3 * s + 1];
            self.lt[2 * a + 1] = self.x[3 * s + 2];
        }
    }

    /// The largest |u| over the sticking contacts' components.
    fn stick_residual(&self) -> f64 {
        self.set.iter().flat_map(|&a| &self.u[3 * a..3 * a + 3]).fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// Solve on one set from the warm start: factorise G_SS + εI, refine. Returns the refinements made, or None
    /// when the shifted matrix does not factorise. Leaves the contact velocities of the result in `u`.
    fn solve_set(&mut self, pb: &DirectProblem) -> Option<usize> {
        let n = 3 * self.set.len();
        self.x.clear();
        for &a in &self.set {
            self.x.extend([pb.ln_warm[a].max(0.0), pb.lt_warm[2 * a], pb.lt_warm[2 * a + 1]]);
        }
        if n == 0 {
            self.scatter();
            self.velocities(pb);
            return Some(0);
        }
        // G_SS (symmetric: row-major = column-major) and the offsets b_S
        self.gss.clear();
        self.gss.resize(n * n, 0.0);
        self.bs.clear();
        for (s, &a) in self.set.iter().enumerate() {
            self.bs.extend([pb.bn[a], pb.bt[2 * a], pb.bt[2 * a + 1]]);
            for (t, &b) in self.set.iter().enumerate() {
                for p in 0..3 {
                    for q in 0..3 {
                        self.gss[(3 * s + p) * n + 3 * t + q] = entry(pb.g, a, p, b, q);
                    }
                }
            }
        }
        let dmax = (0..n).fold(0.0f64, |m, i| m.max(self.gss[i * (n + 1)]));
        if !(dmax > 0.0 && dmax.is_finite()) {
            return None;
        }
        self.k.clone_from(&self.gss);
        let eps = EPS_REL * dmax;
        for i in 0..n {
            self.k[i * (n + 1)] += eps;
        }
        if !profile_cholesky(&mut self.k, n, &mut self.first) {
            return None;
        }
        let (mut prev, mut it) = (f64::INFINITY, 0);
        loop {
            // r = −(G_SS x + b_S), the sticking contacts' velocities negated
            self.d.clear();
            self.d.extend((0..n).map(|i| {
                let row = &self.gss[i * n..(i + 1) * n];
                -(self.bs[i] + row.iter().zip(&self.x).map(|(g, x)| g * x).sum::<f64>())
            }));
            let res = self.d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if res > prev {
                // the last refinement met round-off and made it worse: undone
                self.x.iter_mut().zip(&self.step).for_each(|(x, d)| *x -= d);
                it -= 1;
                break;
            }
            // converged well below the tolerance, or stalled at round-off
            if res <= 0.1 * pb.tol || res > 0.5 * prev || it == MAX_REFINE {
                break;
            }
            prev = res;
            profile_solve(&self.k, n, &self.first, &mut self.d);
            self.step.clone_from(&self.d);
            self.x.iter_mut().zip(&self.d).for_each(|(x, d)| *x += d);
            it += 1;
        }
        self.scatter();
        self.velocities(pb);
        Some(it)
    }

    /// The direct solve of `pb` into `ln`, `lt` (island order; meaningful when `Solved`).
    pub(crate) fn solve(&mut self, pb: &DirectProblem) -> Direct {
        let m = pb.idx.len();
        let mu = |a: usize| pb.contacts[pb.idx[a]].mu;
        self.ln.clear();
        self.ln.resize(m, 0.0);
        self.lt.clear();
        self.lt.resize(2 * m, 0.0);
        self.stick.clear();
        self.stick.extend(pb.ln_warm.iter().map(|&l| l > 0.0));
        let mut refinements = 0;
        for sets in 1..=MAX_SETS {
            self.set.clear();
            self.set.extend((0..m).filter(|&a| self.stick[a]));
            // a frictionless contact cannot stick (its λ_t is 0 and u_t free): the passes solve it
            if self.set.iter().any(|&a| mu(a) <= 0.0) {
                return Direct::Rejected { sets: sets - 1 };
            }
            let Some(r) = self.solve_set(pb) else { return Direct::Rejected { sets } };
            refinements += r;
            // the set's corrections: release a sticking λ_n ≤ 0, take in a separating contact with u_n < 0
            let mut changed = false;
            for a in 0..m {
                let flip = if self.stick[a] { self.ln[a] <= 0.0 } else { self.u[3 * a] < -pb.tol };
                if flip {
                    self.stick[a] = !self.stick[a];
                    changed = true;
                }
            }
            if changed {
                continue;
            }
            let inside = self.set.iter().all(|&a| {
                friction_gauge(pb.kind, self.lt[2 * a], self.lt[2 * a + 1]) < mu(a) * self.ln[a] * (1.0 - STICK_MARGIN)
            });
            if !inside {
                return Direct::Rejected { sets };
            }
            let open = (0..m).filter(|&a| !self.stick[a]).fold(0.0f64, |r, a| r.max(-self.u[3 * a]));
            let residual = self.stick_residual().max(open);
            return if residual <= pb.tol {
                Direct::Solved { residual, sets, refinements }
            } else {
                Direct::Rejected { sets }
            };
        }
        Direct::Rejected { sets: MAX_SETS }
    }
}
