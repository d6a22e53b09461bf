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
//! Where the nearest solution leaves a contact's friction disk (exact cone), the set's other solutions are searched
//! first: redundant contacts' solutions form an affine set, and alternating projections between it and the
//! contacts' Coulomb cones (`DirectSolve::move_into_disks`) find one strictly inside every disk where one exists (the
//! middle cube's corners at contact-compare's stack stop, whose warm-start-nearest split left three disks; sliding
//! them, Gauss–Newton stalled at a vanishing slip and the island kept capped passes 1.6e-4 m/s into penetration);
//! where none exists (most searches on resting stacks) they stall at a constant excess and give up within a few
//! rounds ([`STALL_ROUNDS`]).
//! A sticking contact still outside its disk by more than the tolerance is made sliding — u_n = 0, λ_t = −μ λ_n u_t / ‖u_t‖
//! (maximal dissipation) — and a set with sliding contacts is solved by regularised Gauss–Newton
//! (`solve_newton`), accepted at the same residual; a sliding contact whose slip vanishes sticks again, the next
//! set solved from that result (`DirectSolve::restart`: from the warm start, the nearest sticking solution left the
//! disk again, a stick ↔ slide cycle to the set cap on resting stacks). Where the passes stop at their cap short of the NCP
//! tolerance, the solve is tried again from their result, contacts on the disk's boundary sliding
//! (`DirectProblem::slide_from_warm`): accepted, the island is answered at the fixed point (and differentiated
//! there: without it the step's Jacobian is the fixed point's while the step is the truncated iteration's, 0.82
//! off central differences on contact-compare's stack). Otherwise — a set not found in [`MAX_SETS`] tries, a
//! residual left — the island keeps the ADMM passes' result, and the rejection is reported
//! (`NcpReport::direct_rejected`, `direct_polished`, `StepInfo::fallbacks`).
use super::sets::{friction_gauge, project_coulomb_cone, FrictionSet};
use crate::contact::ContactFrame;
use nalgebra::DMatrix;
use torsion_math::linalg::{dot, profile_cholesky, profile_solve};

/// Active sets tried per solve (each one factorisation).
const MAX_SETS: usize = 6;
/// Gauss–Newton steps per set with sliding contacts.
const MAX_NEWTON: usize = 20;
/// Step halvings per Gauss–Newton step (`solve_newton`'s backtracking on ‖F‖).
const MAX_HALVINGS: usize = 8;
/// A slip below this multiple of the NCP tolerance (1e-9 (1 + max |b_n|) m/s at the default) is round-off: a
/// sliding contact's direction is undefined there (it sticks).
const SLIP_MIN_REL: f64 = 1e6;
/// Refinements per set (each: G_SS λ_S and two triangular solves).
const MAX_REFINE: usize = 12;
/// The Tikhonov shift ε relative to G_SS's largest diagonal entry: small enough that the refinement converges in
/// a few steps (rate ε / σ per step for G's singular values σ), large enough above round-off (1e-16) that the
/// shifted matrix factorises.
const EPS_REL: f64 = 1e-9;
/// Alternating projections per set between {G_SS λ = −b_S} and the friction cones (`move_into_disks`).
const MAX_PROJECT: usize = 100;
/// `move_into_disks` gives up once its excess outside the disks has not dropped by 20 % in this many rounds (an
/// empty intersection: on the resting stacks of 50, 1,074 of 1,496 searches ran all 100 rounds at a constant
/// excess, while those that succeed shrink it by ~0.6 per round, in 21–22 rounds mostly).
const STALL_ROUNDS: usize = 3;
/// `move_into_disks` projects onto the cones of μ (1 − 2 `CONE_MARGIN`) and stops once every contact is within
/// μ (1 − `CONE_MARGIN`) λ_n: strictly inside its disk (a sticking contact, as the derivative's `may_stick`).
const CONE_MARGIN: f64 = 1e-4;
/// Within this (relative) of its disk's boundary a contact counts as possibly sliding (as `tangent.rs`'s
/// `may_stick`): for the retry's start (`slide_from_warm`) and `any_sticking`. The solve's own stick test is the
/// disk itself (to the tolerance): u = 0 on the boundary is an NCP solution.
const STICK_MARGIN: f64 = 1e-6;

/// Whether an island's impulses (`ln`, `lt`: island order; `idx`: the island's contacts) hold a sticking contact
/// (λ_n > 0 strictly inside its friction set). The retry after capped passes runs only then: an island that only
/// slides or separates (a box sliding on four corners: redundant λ_n) keeps the passes' result and their cascade
/// derivative, whose choice among equivalent λ_n is the executed one (docs/gradients.md).
pub(crate) fn any_sticking(
    kind: FrictionSet,
    contacts: &[ContactFrame],
    idx: &[usize],
    ln: &[f64],
    lt: &[f64],
) -> bool {
    idx.iter().enumerate().any(|(a, &i)| {
        ln[a] > 0.0 && friction_gauge(kind, lt[2 * a], lt[2 * a + 1]) < contacts[i].mu * ln[a] * (1.0 - STICK_MARGIN)
    })
}

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
    /// the warm start's contacts on their friction disk's boundary start as sliding (the passes' result)
    pub slide_from_warm: bool,
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
    mode: Vec<Mode>,
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
    /// the Newton solve's residual F, Jacobian J (row-major) and JᵀJ + εI (sliding sets)
    f: Vec<f64>,
    jac: Vec<f64>,
    /// the next set's solve starts from the last result (`ln`, `lt`) instead of the warm start: a sliding
    /// contact whose slip vanished sticks on its disk's boundary, where the warm start's nearest sticking solution
    /// left it (its stick ↔ slide cycle, issue 15)
    restart: bool,
}

/// A sliding contact's residual rows (`DirectSolve::slide_rows`): F's three rows, the slip direction ŝ, the slip
/// ‖u_t‖ and whether ŝ follows it (else frozen at −λ_t / ‖λ_t‖).
struct Slide {
    rows: [f64; 3],
    dir: (f64, f64),
    slip: f64,
    live: bool,
}

/// A contact's role in an active set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// λ = 0, u_n ≥ 0
    Open,
    /// u = 0 (all three components), λ_t strictly inside the disk
    Stick,
    /// u_n = 0, λ_t = −μ λ_n u_t / ‖u_t‖ (on the disk's boundary, opposing the slip: maximal dissipation)
    Slide,
}

/// G_SS (n × n, n = 3 |S|, row-major; symmetric) gathered from the island's blocks (column-major storage):
/// contact a's component p (0 normal, 1 and 2 the tangents) against contact b's component q, G_n, G_nt (and
/// its transpose) and G_t read directly from their storage.
fn gather(g: Blocks, set: &[usize], out: &mut Vec<f64>) {
    let m = g.0.nrows();
    let (gn, gt, gnt) = (g.0.as_slice(), g.1.as_slice(), g.2.as_slice());
    let n = 3 * set.len();
    // every entry is written below: no zeroing (the old values are overwritten)
    if out.len() < n * n {
        out.resize(n * n, 0.0);
    }
    out.truncate(n * n);
    for (s, &a) in set.iter().enumerate() {
        for (t, &b) in set.iter().enumerate() {
            let o = 3 * s * n + 3 * t;
            out[o] = gn[b * m + a];
            for q in 1..3 {
                out[o + q] = gnt[(2 * b + q - 1) * m + a];
            }
            for p in 1..3 {
                let r = o + p * n;
                out[r] = gnt[(2 * a + p - 1) * m + b];
                for q in 1..3 {
                    out[r + q] = gt[(2 * b + q - 1) * 2 * m + 2 * a + p - 1];
                }
            }
        }
    }
}

impl DirectSolve {
    /// u = G λ + b for every contact of the island at (`ln`, `lt`), over contiguous columns (G_n and G_t are
    /// symmetric; G_nt's rows are accumulated column by column).
    fn velocities(&mut self, pb: &DirectProblem) {
        // column-major storage: column j of an r-row block is `[j r..(j + 1) r]`
        let (gn, gt, gnt) = (pb.g.0.as_slice(), pb.g.1.as_slice(), pb.g.2.as_slice());
        let m = pb.idx.len();
        let (ln, lt) = (&self.ln, &self.lt);
        self.u.clear();
        self.u.resize(3 * m, 0.0);
        for (col, l) in gnt.chunks_exact(m.max(1)).zip(lt) {
            for (a, g) in col.iter().enumerate() {
                self.u[3 * a] += g * l;
            }
        }
        for a in 0..m {
            self.u[3 * a] += pb.bn[a] + dot(&gn[a * m..(a + 1) * m], ln);
            for t in 0..2 {
                let k = 2 * a + t;
                let (cnt, ct) = (&gnt[k * m..(k + 1) * m], &gt[k * 2 * m..(k + 1) * 2 * m]);
                self.u[3 * a + 1 + t] = pb.bt[k] + dot(cnt, ln) + dot(ct, lt);
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

    /// The set's residual (m/s): |u| of a sticking contact's components; a sliding one's |u_n| and its maximal
    /// dissipation in velocity units, ‖u_t + ‖u_t‖ λ_t / (μ λ_n)‖ (zero iff λ_t = −μ λ_n u_t / ‖u_t‖ for u_t ≠ 0).
    fn set_residual(&self, pb: &DirectProblem) -> f64 {
        let mut res = 0.0f64;
        for &a in &self.set {
            let u = &self.u[3 * a..3 * a + 3];
            res = res.max(u[0].abs());
            if self.mode[a] == Mode::Slide {
                let (slip, r) = (u[1].hypot(u[2]), pb.contacts[pb.idx[a]].mu * self.ln[a]);
                let (l1, l2) = (self.lt[2 * a], self.lt[2 * a + 1]);
                res = res.max((u[1] + slip * l1 / r).hypot(u[2] + slip * l2 / r));
            } else {
                res = res.max(u[1].abs()).max(u[2].abs());
            }
        }
        res
    }

    /// `x` from the warm start (3 per contact of the set: λ_n ≥ 0, λ_t).
    fn warm_x(&mut self, pb: &DirectProblem) {
        self.x.clear();
        let (ln, lt) = if self.restart { (&self.ln[..], &self.lt[..]) } else { (pb.ln_warm, pb.lt_warm) };
        for &a in &self.set {
            self.x.extend([ln[a].max(0.0), lt[2 * a], lt[2 * a + 1]]);
        }
    }

    /// Iterated Tikhonov refinement of `x` towards {G_SS x = −b_S} with the factor of G_SS + εI in `k`: the
    /// point of that affine set nearest `x` (the correction stays in G_SS's range). Returns the refinements made.
    fn refine(&mut self, pb: &DirectProblem) -> usize {
        let n = 3 * self.set.len();
        let (mut prev, mut it) = (f64::INFINITY, 0);
        loop {
            // r = −(G_SS x + b_S), the sticking contacts' velocities negated
            self.d.clear();
            self.d.extend((0..n).map(|i| -(self.bs[i] + dot(&self.gss[i * n..(i + 1) * n], &self.x))));
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
        it
    }

    /// A sticking set's solutions form an affine set, λ_S⁰ + null(G_SS), where contacts are redundant: where the
    /// one nearest the start leaves a friction disk, another may lie inside every disk. Alternating projections
    /// (at most [`MAX_PROJECT`], fewer where they stall: [`STALL_ROUNDS`]) between the product of the contacts'
    /// Coulomb cones (slightly shrunk, so that the iterates enter the disks' interior in finitely many steps) and
    /// the affine set (`refine`, with the set's factor) move `x` within the solutions towards their intersection
    /// (nonexpansive, deterministic). Leaves `x` on the affine set (the last refinement: inside every disk, or the
    /// stalled search's point nearest them) and its velocities in `u`; returns the refinements made.
    fn move_into_disks(&mut self, pb: &DirectProblem) -> usize {
        let (mut refinements, mut best, mut since) = (0, f64::INFINITY, 0);
        for _ in 0..MAX_PROJECT {
            // the contacts' excess over μ (1 − CONE_MARGIN) λ_n, summed: 0 once every one is inside
            let mut excess = 0.0;
            for (s, &a) in self.set.iter().enumerate() {
                let (mu, x) = (pb.contacts[pb.idx[a]].mu, &self.x[3 * s..3 * s + 3]);
                excess += (x[1].hypot(x[2]) - mu * (1.0 - CONE_MARGIN) * x[0]).max(0.0);
            }
            if excess == 0.0 {
                break;
            }
            // no intersection: the iterates approach the two sets' nearest points, the excess stalls
            if excess < 0.8 * best {
                (best, since) = (excess, 0);
            } else {
                since += 1;
                if since == STALL_ROUNDS {
                    break;
                }
            }
            for (s, &a) in self.set.iter().enumerate() {
                let mu = pb.contacts[pb.idx[a]].mu * (1.0 - 2.0 * CONE_MARGIN);
                project_coulomb_cone(mu, &mut self.x[3 * s..3 * s + 3]);
            }
            refinements += self.refine(pb);
        }
        self.scatter();
        self.velocities(pb);
        refinements
    }

    /// Solve on one set from the warm start: factorise G_SS + εI, refine. Returns the refinements made, or None
    /// when the shifted matrix does not factorise. Leaves the contact velocities of the result in `u`.
    fn solve_set(&mut self, pb: &DirectProblem) -> Option<usize> {
        let n = 3 * self.set.len();
        self.warm_x(pb);
        if n == 0 {
            self.scatter();
            self.velocities(pb);
            return Some(0);
        }
        // G_SS (symmetric: row-major = column-major) and the offsets b_S
        gather(pb.g, &self.set, &mut self.gss);
        self.bs.clear();
        self.bs.extend(self.set.iter().flat_map(|&a| [pb.bn[a], pb.bt[2 * a], pb.bt[2 * a + 1]]));
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
        let it = self.refine(pb);
        self.scatter();
        self.velocities(pb);
        Some(it)
    }

    /// Solve on a set with sliding contacts (disk friction) from the warm start by regularised Gauss–Newton on
    /// F(λ_S) = 0: a sticking contact's rows u = G λ + b; a sliding one's u_n and λ_t + μ λ_n ŝ, ŝ = u_t / ‖u_t‖,
    /// with J = ∂F/∂λ_S (the sliding rows: I, μ ŝ on λ_n, μ λ_n (I − ŝŝᵀ) G_t / ‖u_t‖); each step solves
    /// (JᵀJ + εI) δ = −JᵀF (ε as `EPS_REL`: redundant contacts keep the warm start's split). While a slip is
    /// round-off its direction is frozen at −λ_t / ‖λ_t‖. Returns the steps made, None when a factorisation
    /// fails or a slip direction is undefined; leaves `u` at the result.
    fn solve_newton(&mut self, pb: &DirectProblem) -> Option<usize> {
        let n = 3 * self.set.len();
        self.warm_x(pb);
        let slip_min = SLIP_MIN_REL * pb.tol;
        let (mut prev, mut it) = (f64::INFINITY, 0);
        loop {
            self.scatter();
            self.velocities(pb);
            self.f.clear();
            gather(pb.g, &self.set, &mut self.jac);
            let mut frozen = false;
            for (s, &a) in self.set.iter().enumerate() {
                let u = &self.u[3 * a..3 * a + 3];
                if self.mode[a] == Mode::Stick {
                    self.f.extend_from_slice(u);
                    continue;
                }
                let mu = pb.contacts[pb.idx[a]].mu;
                let ln = self.ln[a];
                let Slide { rows, dir: (s1, s2), slip, live } = self.slide_rows(pb, a, slip_min)?;
                frozen |= !live;
                self.f.extend(rows);
                let (r1, r2) = ((3 * s + 1) * n, (3 * s + 2) * n);
                let c = if live { mu * ln / slip } else { 0.0 };
                for col in 0..n {
                    let (g1, g2) = (self.jac[r1 + col], self.jac[r2 + col]);
                    self.jac[r1 + col] = c * ((1.0 - s1 * s1) * g1 - s1 * s2 * g2);
                    self.jac[r2 + col] = c * ((1.0 - s2 * s2) * g2 - s1 * s2 * g1);
                }
                self.jac[r1 + 3 * s] += mu * s1;
                self.jac[r2 + 3 * s] += mu * s2;
                self.jac[r1 + 3 * s + 1] += 1.0;
                self.jac[r2 + 3 * s + 2] += 1.0;
            }
            let res = self.set_residual(pb);
            if !frozen && (res <= 0.1 * pb.tol || (res > 0.5 * prev && prev <= SLIP_MIN_REL * pb.tol)) {
                break;
            }
            if it == MAX_NEWTON {
                break;
            }
            prev = if frozen { f64::INFINITY } else { res };
            // K = JᵀJ + εI, d = −JᵀF
            self.k.clear();
            self.k.resize(n * n, 0.0);
            self.d.clear();
            self.d.resize(n, 0.0);
            for r in 0..n {
                let row = &self.jac[r * n..(r + 1) * n];
                // from the row's first non-zero (J is banded as G_SS): the products before it are zeros, whose
                // sums would leave K as it is, bit for bit
                let lo = row.iter().position(|v| *v != 0.0).unwrap_or(n);
                for (i, &ji) in row.iter().enumerate().skip(lo).filter(|(_, v)| **v != 0.0) {
                    self.d[i] -= ji * self.f[r];
                    for (j, &jj) in row.iter().enumerate().take(i + 1).skip(lo) {
                        self.k[i * n + j] += ji * jj;
                    }
                }
            }
            for i in 0..n {
                for j in 0..i {
                    self.k[j * n + i] = self.k[i * n + j];
                }
            }
            let dmax = (0..n).fold(0.0f64, |m, i| m.max(self.k[i * (n + 1)]));
            if !(dmax > 0.0 && dmax.is_finite()) {
                return None;
            }
            for i in 0..n {
                self.k[i * (n + 1)] += EPS_REL * dmax;
            }
            if !profile_cholesky(&mut self.k, n, &mut self.first) {
                return None;
            }
            profile_solve(&self.k, n, &self.first, &mut self.d);
            // backtracking on ‖F‖: the full step where it decreases ‖F‖ (the plain Gauss–Newton iterate), else
            // halved up to [`MAX_HALVINGS`] times (a yawing box's four sliding corners: full steps cycled at
            // residual 1e-2 m/s from the cold start)
            let f0: f64 = self.f.iter().map(|v| v * v).sum();
            self.step.clone_from(&self.x);
            let mut alpha = 1.0;
            for h in 0..=MAX_HALVINGS {
                for ((x, x0), d) in self.x.iter_mut().zip(&self.step).zip(&self.d) {
                    *x = x0 + alpha * d;
                }
                if h == MAX_HALVINGS || self.newton_norm2(pb) < f0 {
                    break;
                }
                alpha *= 0.5;
            }
            it += 1;
        }
        Some(it)
    }

    /// Sliding contact a's rows of [`DirectSolve::solve_newton`]'s F at the current `ln`, `lt`, `u`: u_n and
    /// λ_t + μ λ_n ŝ, ŝ = u_t / ‖u_t‖, or −λ_t / ‖λ_t‖ frozen while the slip is at most `slip_min` (round-off);
    /// None when that direction is undefined too (λ_t = 0).
    fn slide_rows(&self, pb: &DirectProblem, a: usize, slip_min: f64) -> Option<Slide> {
        let u = &self.u[3 * a..3 * a + 3];
        let mu = pb.contacts[pb.idx[a]].mu;
        let (ln, l1, l2) = (self.ln[a], self.lt[2 * a], self.lt[2 * a + 1]);
        let slip = u[1].hypot(u[2]);
        let live = slip > slip_min;
        let dir = if live {
            (u[1] / slip, u[2] / slip)
        } else {
            let l = l1.hypot(l2);
            if l.is_nan() || l <= 0.0 {
                return None;
            }
            (-l1 / l, -l2 / l)
        };
        Some(Slide { rows: [u[0], l1 + mu * ln * dir.0, l2 + mu * ln * dir.1], dir, slip, live })
    }

    /// ‖F‖² of [`DirectSolve::solve_newton`] at `x` (`slide_rows` for the sliding contacts, u for the sticking
    /// ones; infinite where a slip direction is undefined); leaves `ln`, `lt`, `u` at `x`.
    fn newton_norm2(&mut self, pb: &DirectProblem) -> f64 {
        self.scatter();
        self.velocities(pb);
        let slip_min = SLIP_MIN_REL * pb.tol;
        let mut sum = 0.0;
        for &a in &self.set {
            let rows = if self.mode[a] == Mode::Stick {
                [self.u[3 * a], self.u[3 * a + 1], self.u[3 * a + 2]]
            } else {
                match self.slide_rows(pb, a, slip_min) {
                    Some(r) => r.rows,
                    None => return f64::INFINITY,
                }
            };
            sum += rows.iter().map(|v| v * v).sum::<f64>();
        }
        sum
    }

    /// The direct solve of `pb` into `ln`, `lt` (island order; meaningful when `Solved`).
    pub(crate) fn solve(&mut self, pb: &DirectProblem) -> Direct {
        let m = pb.idx.len();
        let mu = |a: usize| pb.contacts[pb.idx[a]].mu;
        self.ln.clear();
        self.ln.resize(m, 0.0);
        self.lt.clear();
        self.lt.resize(2 * m, 0.0);
        self.mode.clear();
        self.restart = false;
        let slides = pb.slide_from_warm && pb.kind == FrictionSet::Cone;
        self.mode.extend((0..m).map(|a| {
            let (l, g) = (pb.ln_warm[a], friction_gauge(pb.kind, pb.lt_warm[2 * a], pb.lt_warm[2 * a + 1]));
            match l > 0.0 {
                false => Mode::Open,
                true if slides && g >= mu(a) * l * (1.0 - STICK_MARGIN) => Mode::Slide,
                true => Mode::Stick,
            }
        }));
        let mut refinements = 0;
        let slip_min = SLIP_MIN_REL * pb.tol;
        // a sticking contact of the set outside its disk (beyond the tolerance, in N·s)
        let outside = |a: usize, d: &Self| {
            d.mode[a] == Mode::Stick
                && d.set.contains(&a)
                && friction_gauge(pb.kind, d.lt[2 * a], d.lt[2 * a + 1]) > mu(a) * d.ln[a] + pb.tol
        };
        // whether contact a's own impulse could stop its slip within its disk (its diagonal of G alone): the
        // impulse stopping u_n, |u_n| / G_nn, against the one stopping the slip, ‖u_t‖ / G_tt — a contact taken
        // in that could not slides (a box sliding at 1.5 m/s), one that could sticks (a yawing box whose corners
        // slip 1e-3 m/s under a 4e-2 m/s approach: taken in sliding, Gauss–Newton found no sliding solution)
        let m2 = 2 * m;
        let (gn, gt) = (pb.g.0.as_slice(), pb.g.1.as_slice());
        let can_stop = |a: usize, slip: f64, approach: f64| {
            let g_t = 0.5 * (gt[2 * a * m2 + 2 * a] + gt[(2 * a + 1) * m2 + 2 * a + 1]);
            slip * gn[a * m + a] <= mu(a) * approach * g_t
        };
        for sets in 1..=MAX_SETS {
            self.set.clear();
            self.set.extend((0..m).filter(|&a| self.mode[a] != Mode::Open));
            // a frictionless contact cannot stick (its λ_t is 0 and u_t free): the passes solve it
            if self.set.iter().any(|&a| mu(a) <= 0.0) {
                return Direct::Rejected { sets: sets - 1 };
            }
            let sliding = self.set.iter().any(|&a| self.mode[a] == Mode::Slide);
            let r = if sliding { self.solve_newton(pb) } else { self.solve_set(pb) };
            let Some(r) = r else { return Direct::Rejected { sets } };
            refinements += r;
            // a sticking solution outside a disk (exact cone; redundant contacts): another of the set's solutions,
            // inside every disk, before any contact is made sliding (`move_into_disks`)
            if !sliding && pb.kind == FrictionSet::Cone && (0..m).any(|a| outside(a, self)) {
                refinements += self.move_into_disks(pb);
            }
            // the set's corrections: release a λ_n ≤ 0, take in a separating contact with u_n < 0, a sliding
            // contact whose slip vanished sticks
            let mut changed = false;
            for a in 0..m {
                let to = match self.mode[a] {
                    // taken in sliding where it slips (exact cone): sticking a contact that moves across the
                    // surface asks for a friction outside its disk
                    Mode::Open if self.u[3 * a] < -pb.tol => {
                        let slip = self.u[3 * a + 1].hypot(self.u[3 * a + 2]);
                        if pb.kind == FrictionSet::Cone && slip > slip_min && !can_stop(a, slip, -self.u[3 * a]) {
                            Mode::Slide
                        } else {
                            Mode::Stick
                        }
                    }
                    Mode::Stick | Mode::Slide if self.ln[a] <= 0.0 => Mode::Open,
                    Mode::Slide if self.u[3 * a + 1].hypot(self.u[3 * a + 2]) <= slip_min => {
                        // sticks on the boundary: the next solve from this result (`restart`)
                        self.restart = true;
                        Mode::Stick
                    }
                    same => same,
                };
                changed |= to != self.mode[a];
                self.mode[a] = to;
            }
            // a sticking contact outside its disk (beyond the tolerance, in N·s) slides (the exact cone only); from
            // the passes' result in the same correction as the others (their set is near the solution's), else
            // once the rest holds. On the boundary it sticks: u = 0 there is an NCP solution (a contact whose slip
            // vanished comes back here, from its sliding result: no stick ↔ slide cycle)
            if changed && slides {
                for a in 0..m {
                    if outside(a, self) {
                        self.mode[a] = Mode::Slide;
                    }
                }
            }
            if changed {
                continue;
            }
            if (0..m).any(|a| outside(a, self)) {
                if pb.kind != FrictionSet::Cone {
                    return Direct::Rejected { sets };
                }
                for a in 0..m {
                    if outside(a, self) {
                        self.mode[a] = Mode::Slide;
                    }
                }
                continue;
            }
            let open = (0..m).filter(|&a| self.mode[a] == Mode::Open).fold(0.0f64, |r, a| r.max(-self.u[3 * a]));
            let residual = self.set_residual(pb).max(open);
            return if residual <= pb.tol {
                Direct::Solved { residual, sets, refinements }
            } else {
                Direct::Rejected { sets }
            };
        }
        Direct::Rejected { sets: MAX_SETS }
    }
}
