//! Implicit derivative of the converged staggered fixed point (spec 001 §3.3–3.5, §3.8–3.10): at a solution of
//! the NCP both sub-problems' KKT conditions hold with the *same* impulses, so instead of chaining the
//! derivatives of the executed passes (the cascade of §3.10) one linear system couples them:
//! ```text
//! [ G_n,FF   G_nt,FT    0 ] [dλ_n,F]   [ −(dG_n λ_n + dG_nt λ_t + db_n)_F ]
//! [ G_tn,TF  H_t        A ] [dλ_t,T] = [ −(dG_t λ_t + dG_ntᵀλ_n + db_t)_T ]
//! [ μ ∂c/∂r  Aᵀ         0 ] [dν    ]   [ −(∂c/∂r) dμ λ_n                  ]
//! ```
//! F: normal impulses not pinned at 0; T, H_t, A: the QCQP's free coordinates, Hessian and normalised active
//! rows (`ReducedKkt`); the last row is the friction radius r = μ λ_n of a sliding contact moving with λ_n.
//! Why: on ≥ 3 coplanar contacts that stick (a box flat on the floor) the tangential block G_t alone is
//! rank-deficient and its rank *grows* under a tilt, so a single pass has no derivative there — but the coupled
//! constraint set (all normal and tangential rows together) keeps its rank, so v⁺ of the fixed point is smooth.
//! The system is singular whenever impulses are redundant; it is solved in the minimum-norm sense (the
//! pseudo-inverse's product, by a complete orthogonal decomposition factored once per step and shared by every
//! direction, or transposed for the reverse mode's one cotangent), consistent where the rank is constant
//! (docs/gradients.md). Its solutions are x + N c over the null space N. Where the redundant contacts stick,
//! J_nᵀdλ_n + J_tᵀdλ_t is the same for every c. Where they slide (a box sliding on four corners: four normal rows
//! constrain three motions, so the NCP's solutions form a curve), a twist of λ_n turns the friction's moment, each
//! corner's friction following its own slip: v⁺ moves along the curve and c matters. The forward solve returns
//! the member nearest its (stop-gradient) start (`direct.rs`: Tikhonov-regularised steps), whose change is
//! orthogonal to the curve; so the derivative takes the impulses' minimum-norm member, dλ projected off the null
//! space's impulse parts (`project_off_null`; reverse mode: λ̄ projected before K⁺ᵀ). The minimum norm over (dλ,
//! dν) — before session 13 — took another member: dω_z 0.8 % off central differences on sysid-contact's pushed
//! box, [A_v | B] 8.7e-3 on a box sliding and yawing at 1 rad/s (now 8.5e-7).
use super::backward::ReducedKkt;
use super::sets::{Active, ConstraintSet, FrictionSet};
use crate::solver::SolverError;
use nalgebra::DMatrix;
use torsion_math::linalg::Cod;

/// Below this fraction of the first pivot's norm the remaining columns are treated as zero (redundant impulses).
const RANK_TOL: f64 = 1e-11;

/// The coupled KKT system at a converged (λ_n, λ_t), factored once (`Cod`: minimum-norm solves).
/// [`FixedPointKkt::rebuild`] reuses the buffers: no allocation once grown.
#[derive(Default)]
pub(crate) struct FixedPointKkt {
    free_n: Vec<usize>,
    free_t: Vec<usize>,
    active: Vec<Active>,
    cod: Cod,
    ln: Vec<f64>,
    lt: Vec<f64>,
    /// the coupled system is singular: the impulses are redundant (e.g. ≥ 3 coplanar contacts)
    pub rank_deficient: bool,
    /// some contact sticks (λ_n > 0, λ_t strictly inside its friction set)
    pub sticking: bool,
    /// the build's scratch: the QP's and the QCQP's linear terms and reduced KKT systems, radii, positions
    g_n: Vec<f64>,
    g_t: Vec<f64>,
    r: Vec<f64>,
    kn: Option<ReducedKkt>,
    kt: Option<ReducedKkt>,
    pos_n: Vec<usize>,
    /// an orthonormal basis (row-major, `nbasis` × (nfn + nft)) of the null space's impulse parts, when the system
    /// is singular: the directions along the solutions' family that the derivative is projected off
    basis: Vec<f64>,
    nbasis: usize,
    /// null-vector scratch (2 × m)
    nscratch: Vec<f64>,
}

/// `v` ← `x` (refilled in place).
fn set_from<T: Copy>(v: &mut Vec<T>, x: &[T]) {
    v.clear();
    v.extend_from_slice(x);
}

impl FixedPointKkt {
    /// Rebuild at the impulses (λ_n, λ_t) of the blocks G_n (nc²), G_t (2nc × 2nc), G_nt (nc × 2nc) and offsets
    /// b_n, b_t, with friction coefficients μ per contact, into this storage (on an error the contents are
    /// unspecified).
    #[allow(clippy::too_many_arguments)]
    pub fn rebuild(
        &mut self,
        gn: &DMatrix<f64>,
        gt: &DMatrix<f64>,
        gnt: &DMatrix<f64>,
        bn: &[f64],
        bt: &[f64],
        ln: &[f64],
        lt: &[f64],
        mu: &[f64],
        kind: FrictionSet,
    ) -> Result<(), SolverError> {
        let nc = ln.len();
        let (g_n, g_t, r) = (&mut self.g_n, &mut self.g_t, &mut self.r);
        g_n.clear();
        g_n.extend((0..nc).map(|i| bn[i] + (0..2 * nc).map(|k| gnt[(i, k)] * lt[k]).sum::<f64>()));
        g_t.clear();
        g_t.extend((0..2 * nc).map(|k| bt[k] + (0..nc).map(|i| gnt[(i, k)] * ln[i]).sum::<f64>()));
        r.clear();
        r.extend((0..nc).map(|i| mu[i] * ln[i]));
        let kn = self.kn.get_or_insert_with(|| ReducedKkt::with_capacity(nc, 0));
        kn.rebuild(gn, g_n, ln, ConstraintSet::Nonneg)?;
        let kt = self.kt.get_or_insert_with(|| ReducedKkt::with_capacity(2 * nc, 0));
        kt.rebuild(gt, g_t, lt, ConstraintSet::Friction { kind, r })?;
        let (free_n, free_t, active) = (&mut self.free_n, &mut self.free_t, &mut self.active);
        set_from(free_t, kt.free());
        // a contact with friction whose radius μλ_n is 0 has its λ_t pinned at 0 (`friction_active`: 𝒵); its λ_n
        // is pinned with it, though the QP's bound at λ_n = 0 is only weakly active there (u_n = 0: a contact the
        // direct solve released from a redundant set, or one just touching). Left free, the minimum-norm solve
        // moves λ_n without its friction — a normal impulse off the Coulomb cone, whose torque was 0.086 rad/s
        // per unit μ of spurious yaw on sysid-contact's box sliding on three of its four corners. Pinned, the
        // derivative is that of the solutions keeping the contact released (redundant contacts: the motion's
        // unique derivative; a contact just touching: its activation, a non-smooth point, docs/gradients.md).
        free_n.clear();
        free_n.extend(kn.free().iter().copied().filter(|&i| mu[i] <= 0.0 || free_t.contains(&(2 * i))));
        active.clear();
        active.extend_from_slice(kt.active());
        let (nfn, nft) = (free_n.len(), free_t.len());
        self.sticking = (0..nc)
            .any(|i| ln[i] > 0.0 && mu[i] > 0.0 && free_t.contains(&(2 * i)) && !active.iter().any(|a| a.index == i));
        let m = nfn + nft + active.len();
        // the matrix (column-major), factored in place below
        let k = self.cod.matrix_mut(m);
        let pos_n = &mut self.pos_n;
        pos_n.clear();
        pos_n.resize(nc, usize::MAX);
        for (a, &i) in free_n.iter().enumerate() {
            pos_n[i] = a;
            for (b, &j) in free_n.iter().enumerate() {
                k[a + b * m] = gn[(i, j)];
            }
            for (b, &t) in free_t.iter().enumerate() {
                k[a + (nfn + b) * m] = gnt[(i, t)];
                k[nfn + b + a * m] = gnt[(i, t)];
            }
        }
        let (mt, kt_m) = kt.matrix_slice();
        for a in 0..mt {
            for b in 0..mt {
                k[nfn + a + (nfn + b) * m] = kt_m[a + b * mt];
            }
        }
        for (c, act) in active.iter().enumerate() {
            let a = pos_n[act.index];
            if a != usize::MAX {
                k[nfn + nft + c + a * m] = act.d_dr * mu[act.index];
            }
        }
        let rank = self.cod.factor(RANK_TOL);
        self.rank_deficient = rank < m;
        self.null_impulse_basis(nfn + nft, m - rank);
        set_from(&mut self.ln, ln);
        set_from(&mut self.lt, lt);
        Ok(())
    }

    /// The orthonormal basis of the null space's impulse parts (the first `nl` coordinates of its `k` vectors; a
    /// vector whose impulse part is below 1e-6 after the earlier ones are taken off is skipped: it moves only ν).
    fn null_impulse_basis(&mut self, nl: usize, k: usize) {
        let m = self.cod.dim();
        self.basis.clear();
        self.nbasis = 0;
        if k == 0 {
            return;
        }
        self.nscratch.clear();
        self.nscratch.resize(2 * m, 0.0);
        for j in 0..k {
            let (work, z) = self.nscratch.split_at_mut(m);
            self.cod.null_vector(j, work, z);
            let z = &mut z[..nl];
            for b in self.basis.chunks_exact(nl) {
                let d: f64 = b.iter().zip(z.iter()).map(|(x, y)| x * y).sum();
                z.iter_mut().zip(b).for_each(|(x, &y)| *x -= d * y);
            }
            let norm = z.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 1e-6 {
                self.basis.extend(z.iter().map(|x| x / norm));
                self.nbasis += 1;
            }
        }
    }

    /// `x[..nl]` ← its part orthogonal to the null space's impulse parts (`basis`).
    fn project_off_null(&self, x: &mut [f64]) {
        if self.nbasis == 0 {
            return;
        }
        let nl = self.basis.len() / self.nbasis;
        let x = &mut x[..nl];
        for b in self.basis.chunks_exact(nl) {
            let d: f64 = b.iter().zip(x.iter()).map(|(p, q)| p * q).sum();
            x.iter_mut().zip(b).for_each(|(p, &q)| *p -= d * q);
        }
    }

    /// (dλ_n, dλ_t) for perturbations of the blocks, offsets and friction coefficients, into `dln`, `dlt` with
    /// the scratch `rhs`, `x` (no allocation once grown).
    #[allow(clippy::too_many_arguments)]
    pub fn jvp_into(
        &self,
        dgn: &DMatrix<f64>,
        dgt: &DMatrix<f64>,
        dgnt: &DMatrix<f64>,
        dbn: &[f64],
        dbt: &[f64],
        dmu: &[f64],
        dln: &mut Vec<f64>,
        dlt: &mut Vec<f64>,
        rhs: &mut Vec<f64>,
        x: &mut Vec<f64>,
    ) {
        let (ln, lt) = (&self.ln, &self.lt);
        let (nc, nfn) = (ln.len(), self.free_n.len());
        rhs.clear();
        for &i in &self.free_n {
            let s = (0..nc).map(|j| dgn[(i, j)] * ln[j]).sum::<f64>()
                + (0..2 * nc).map(|k| dgnt[(i, k)] * lt[k]).sum::<f64>()
                + dbn[i];
            rhs.push(-s);
        }
        for &k in &self.free_t {
            let s = (0..2 * nc).map(|l| dgt[(k, l)] * lt[l]).sum::<f64>()
                + (0..nc).map(|i| dgnt[(i, k)] * ln[i]).sum::<f64>()
                + dbt[k];
            rhs.push(-s);
        }
        for act in &self.active {
            rhs.push(-act.d_dr * dmu[act.index] * ln[act.index]);
        }
        // x = K⁺ rhs, then the impulses' minimum-norm member of the solutions x + N c (module doc)
        x.clear();
        x.resize(rhs.len(), 0.0);
        self.cod.solve(rhs, x);
        self.project_off_null(x);
        dln.clear();
        dln.resize(nc, 0.0);
        dlt.clear();
        dlt.resize(2 * nc, 0.0);
        for (a, &i) in self.free_n.iter().enumerate() {
            dln[i] = x[a];
        }
        for (b, &k) in self.free_t.iter().enumerate() {
            dlt[k] = x[nfn + b];
        }
    }
}

impl FixedPointKkt {
    /// Reverse mode of [`FixedPointKkt::jvp_into`]: for λ̄ = (λ̄_n, λ̄_t), w = K⁺ᵀ λ̄ (on the free coordinates)
    /// gives λ̄ᵀdλ = −y_nᵀ(dG_n λ_n + dG_nt λ_t + db_n) − y_tᵀ(dG_t λ_t + dG_ntᵀ λ_n + db_t) + μ̄ᵀdμ: `yn`, `yt` ←
    /// w's parts (0 off the free coordinates), μ̄ accumulated into `mu_bar`; `x`: scratch (no allocation once
    /// grown).
    pub fn vjp_into(
        &self,
        ln_bar: &[f64],
        lt_bar: &[f64],
        yn: &mut Vec<f64>,
        yt: &mut Vec<f64>,
        mu_bar: &mut [f64],
        x: &mut Vec<f64>,
    ) {
        let (nc, nfn, nft, m) = (self.ln.len(), self.free_n.len(), self.free_t.len(), self.cod.dim());
        // x[..m] = λ̄ on the free coordinates (no ν part), w = x[m..] = K⁺ᵀ x[..m]
        x.clear();
        x.extend(self.free_n.iter().map(|&i| ln_bar[i]).chain(self.free_t.iter().map(|&k| lt_bar[k])));
        x.resize(2 * m, 0.0);
        // λ̄ᵀ P_N (the projection of `jvp_into`, symmetric) before K⁺ᵀ
        self.project_off_null(x);
        let (xb, w) = x.split_at_mut(m);
        self.cod.solve_transpose(xb, w);
        yn.clear();
        yn.resize(nc, 0.0);
        yt.clear();
        yt.resize(2 * nc, 0.0);
        for (a, &i) in self.free_n.iter().enumerate() {
            yn[i] = w[a];
        }
        for (b, &k) in self.free_t.iter().enumerate() {
            yt[k] = w[nfn + b];
        }
        for (c, act) in self.active.iter().enumerate() {
            mu_bar[act.index] -= w[nfn + nft + c] * act.d_dr * self.ln[act.index];
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ncp::{NcpOptions, NcpSolver};
    use crate::solver::{DiffSolver, Solver};
    use torsion_model::{Control, GenState, Model, ParamSelection};

    /// Floor + cubes (1 kg, half 0.1 m, μ 0.16) at heights `z` (contact-compare's stack: 0.1, 0.3, 0.5).
    fn cubes(z: &[f64]) -> Model {
        let bodies: String = z
            .iter()
            .map(|z| {
                format!(
                    r#"<body pos="0 0 {z}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.16"/></body>"#
                )
            })
            .collect();
        let xml = format!(
            r#"<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="50 50 0.1" friction="0.16"/>{bodies}</worldbody></mujoco>"#
        );
        torsion_model::io::mjcf::load_mjcf_str(&xml, "cubes.xml", None).unwrap()
    }

    /// [A_v | B] (the velocity columns and the controls, as contact-compare) of `solver` at `s` against central
    /// differences of the step (step h): normwise relative to max(‖FD‖, 1) (a box at rest: [A_v | B] = 0).
    fn fd_error(solver: &NcpSolver, m: &Model, s: &GenState, dt: f64, h: f64) -> f64 {
        let nv = m.nv();
        let zero = vec![0.0; nv];
        let jac = solver.step_jacobians(m, s, &Control::zeros(nv), dt, &ParamSelection::none()).unwrap();
        let mut ws = Solver::workspace(solver, m).unwrap();
        let mut next = |st: &GenState, uu: &[f64]| {
            let mut o = st.clone();
            solver.step(m, st, &Control::from_torques(uu), dt, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(s, &zero);
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for k in nv..3 * nv {
            let mut side = |sign: f64| {
                let o = if k < 2 * nv {
                    let mut d = vec![0.0; 2 * nv];
                    d[k] = sign * h;
                    next(&solver.retract(m, s, &d), &zero)
                } else {
                    let mut uu = zero.clone();
                    uu[k - 2 * nv] += sign * h;
                    next(s, &uu)
                };
                solver.local_diff(m, &base, &o)
            };
            let (p, q) = (side(1.0), side(-1.0));
            for r in 0..2 * nv {
                let fd = (p[r] - q[r]) / (2.0 * h);
                let an = if k < 2 * nv { jac.a[(r, k)] } else { jac.b[(r, k - 2 * nv)] };
                num += (an - fd).powi(2);
                den += fd * fd;
            }
        }
        (num / den.max(1.0)).sqrt()
    }

    /// A step answered at the fixed point by the direct solve (first try, or from the passes' result, sliding
    /// contacts included) is differentiated there: error ≤ 1e-6 (`fd_error`) for a box at rest and contact-compare's
    /// 3-cube stack (the top cube from 0.5 m/s; a box sliding alone on four corners is not retried: `any_sticking`)
    /// at each of its first 12 steps that is answered at the fixed point (before the sliding direct solve: the
    /// passes stopped at their cap, contact-compare's figure 0.82).
    #[test]
    fn directly_solved_steps_match_central_differences() {
        let dt = 0.01;
        for (name, z, vx, steps) in
            [("resting box", vec![0.1], (0, 0.0), 20..21), ("stack, top sliding", vec![0.1, 0.3, 0.5], (2, 0.5), 1..12)]
        {
            let m = cubes(&z);
            let nv = m.nv();
            let solver = NcpSolver::new(NcpOptions::default());
            let mut ws = Solver::workspace(&solver, &m).unwrap();
            let mut v = vec![0.0; nv];
            v[6 * vx.0 + 3] = vx.1;
            let u0 = Control::zeros(nv);
            let mut s = GenState::new(m.qpos0.clone(), v);
            let mut o = s.clone();
            let mut checked = 0;
            for k in 0..steps.end {
                let info = solver.step(&m, &s, &u0, dt, &mut o, &mut ws, None).unwrap();
                let (direct, polished) = (ws.report.direct, ws.report.direct_polished);
                if steps.contains(&k) && direct + polished >= 1 {
                    assert!(info.residual < 1e-12, "{name} step {k}: NCP residual {:e}", info.residual);
                    let e = fd_error(&solver, &m, &s, dt, 1e-5);
                    eprintln!("{name} step {k}: [A_v | B] vs central differences {e:.2e} ({direct} direct, {polished} polished)");
                    assert!(e <= 1e-6, "{name} step {k}: {e:e}");
                    checked += 1;
                }
                std::mem::swap(&mut s, &mut o);
            }
            assert!(checked >= 1, "{name}: no step answered at the fixed point");
        }
    }

    /// A box sliding and yawing on its four bottom corners: the impulses are redundant (four normal rows constrain
    /// three motions) and, unlike a sticking support, the split moves v⁺ (each corner's friction follows its own slip
    /// direction, so a twist of λ_n turns the friction's moment): the system is singular with a null vector that
    /// Jᵀ does not annihilate. The derivative takes the impulses' minimum-norm member (`project_off_null`): 8.5e-7
    /// against central differences (h = 1e-4; the rest is the selection's curvature, docs/gradients.md), 8.7e-3
    /// before, when the minimum-norm solve over (dλ, dν) took another member (sysid-contact's pushed box: dω_z
    /// 0.8 % off). Every step checked is answered directly with four sliding contacts.
    #[test]
    fn a_box_sliding_and_yawing_on_four_corners_matches_central_differences() {
        let dt = 0.01;
        let m = cubes(&[0.1]);
        let nv = m.nv();
        let solver = NcpSolver::new(NcpOptions::default());
        let mut ws = Solver::workspace(&solver, &m).unwrap();
        let mut v = vec![0.0; nv];
        (v[2], v[3], v[4]) = (1.0, 0.5, 0.2);
        let u0 = Control::zeros(nv);
        let mut s = GenState::new(m.qpos0.clone(), v);
        let mut o = s.clone();
        let mut worst = 0.0f64;
        for k in 0..8 {
            let info = solver.step(&m, &s, &u0, dt, &mut o, &mut ws, None).unwrap();
            if k >= 2 {
                let r = &ws.report;
                assert_eq!(
                    (info.contacts, r.direct),
                    (4, 1),
                    "step {k}: {} contacts, {} direct",
                    info.contacts,
                    r.direct
                );
                assert!(info.residual < 1e-12, "step {k}: NCP residual {:e}", info.residual);
                for i in 0..4 {
                    let (ln, lt) = (r.lambda_n[i], r.lambda_t[2 * i].hypot(r.lambda_t[2 * i + 1]));
                    assert!(ln > 0.0 && (lt - 0.16 * ln).abs() < 1e-9 * ln, "step {k}, corner {i}: not sliding");
                }
                let e = fd_error(&solver, &m, &s, dt, 1e-4);
                eprintln!("sliding, yawing box step {k}: [A_v | B] vs central differences {e:.2e} (ω_z {:.3})", o.v[2]);
                worst = worst.max(e);
            }
            std::mem::swap(&mut s, &mut o);
        }
        assert!(worst <= 5e-6, "{worst:e}");
    }
}
