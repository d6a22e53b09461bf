//! Reverse mode of the contact step (`DiffSolver::step_vjp`, issue 15): ḡᵀ [A B C] by one adjoint sweep instead
//! of the Jacobians' columns. With λ the step's impulses, (q⁺, v⁺) = F(x, λ) = advance(q, v^p + M⁻¹Jᵀλ):
//! 1. v̄⁺ = (∂F/∂v⁺)ᵀ ḡ: one `LANES` dual pass of the integration (a lane per joint DoF: a joint's q⁺, v⁺ move
//!    with its own v⁺ only), then λ̄ = J M⁻¹ v̄⁺ (f64, the step's factor);
//! 2. each island's solve backwards (`IslandJvp::vjp`: the derivative the forward mode takes — the fixed point's
//!    minimum-norm solve transposed (`Cod::solve_transpose`), or the executed cascade through its reduced KKT systems): λ̄ᵀdλ =
//!    Σ_t −y_tᵀ d(G λ_t + b)|_λ + μ̄ᵀdμ, a few residual terms (one for the fixed point, two per pass);
//! 3. G λ + b = J (v^p + M⁻¹Jᵀλ) + (b − J v^p) (G = J M⁻¹ Jᵀ, spec 001 §3.1): each term is a contact velocity
//!    of the smooth code at fixed λ, so what is left is the gradient of the scalar
//!    φ(x) = ḡᵀF(x, λ) − Σ_t y_tᵀ(J v(x, λ_t) + b − J v^p) + μ̄ᵀμ(x), taken by the Jacobians' grouped dual passes
//!    (one direction per component and lane, `Groups`) with neither the Delassus blocks (`Prelude::delassus`
//!    off) nor an island solve per lane: per pass the smooth code on duals (kinematics, M on the DoF tree,
//!    contact rows: most of a pass, BENCHMARKS.md session 9) and O(nv + nc) per term, instead of O(island²) per lane;
//! 4. the controls without passes (LTL mass solve): u moves only v^p = S(v + Δt M⁻¹(u − c(q, v))) + … (S: the
//!    implicit gyroscopic update, affine in its input), and b − J v^p holds no v^p, so φ's v^p cotangent is
//!    v̄^p = v̄⁺ − Jᵀ Σ_t y_t and ū = Δt M⁻¹ Sᵀ v̄^p: the passes seed q and v only (2 n_max directions, not 3).
//!
//! A step with an impact (restitution), or with an island differentiated through the cascade of a singular
//! (redundant) KKT system — its chained product is round-off times the condition number, and forward and reverse
//! products differ at that level (2.9e-6 relative on a box sliding on four corners) — takes the forward Jacobians
//! (`step_vjp` multiplies them).
use super::*;
use crate::contact::prelude::apply_impulses_into;
use torsion_dynamics::gyroscopic::implicit_gyroscopic_vjp;
use torsion_dynamics::ltl::ltl_solve_in_place;
use torsion_model::joint_maps::ambient_to_tangent_into;

/// The residual terms of the islands' adjoints, over all contacts: term t of every island (its t-th, zero
/// elsewhere) shares one velocity solve per pass. The contribution of term t is −ynᵀ r_n − ytᵀ r_t at the
/// impulses (ln, lt), r = J v(λ) + (b − J v^p).
#[derive(Default)]
pub(super) struct Terms {
    n: usize,
    yn: Vec<Vec<f64>>,
    yt: Vec<Vec<f64>>,
    ln: Vec<Vec<f64>>,
    lt: Vec<Vec<f64>>,
}

impl Terms {
    /// Term t at the island's contacts `idx` (island order in `yn`, `yt`, `ln`, `lt`; a missing y stays 0); terms
    /// up to t are zeroed for `nc` contacts when first used since `clear`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn set(
        &mut self,
        t: usize,
        nc: usize,
        idx: &[usize],
        yn: Option<&[f64]>,
        yt: Option<&[f64]>,
        ln: &[f64],
        lt: &[f64],
    ) {
        while self.n <= t {
            if self.yn.len() == self.n {
                for v in [&mut self.yn, &mut self.yt, &mut self.ln, &mut self.lt] {
                    v.push(vec![]);
                }
            }
            let n = self.n;
            for (v, len) in [(&mut self.yn, nc), (&mut self.yt, 2 * nc), (&mut self.ln, nc), (&mut self.lt, 2 * nc)] {
                v[n].clear();
                v[n].resize(len, 0.0);
            }
            self.n += 1;
        }
        for (a, &i) in idx.iter().enumerate() {
            if let Some(y) = yn {
                self.yn[t][i] = y[a];
            }
            if let Some(y) = yt {
                self.yt[t][2 * i..2 * i + 2].copy_from_slice(&y[2 * a..2 * a + 2]);
            }
            self.ln[t][i] = ln[a];
            self.lt[t][2 * i..2 * i + 2].copy_from_slice(&lt[2 * a..2 * a + 2]);
        }
    }

    fn clear(&mut self) {
        self.n = 0;
    }
}

/// The reverse mode's buffers (reused from call to call).
#[derive(Default)]
pub(super) struct AdjointScratch {
    /// ḡ in tangent coordinates (2nv), its q part
    g: Vec<f64>,
    gq: Vec<f64>,
    /// the step's impulses (all contacts), v⁺, v̄⁺, M⁻¹ v̄⁺
    ln: Vec<f64>,
    lt: Vec<f64>,
    vplus: Vec<f64>,
    vbar: Vec<f64>,
    w: Vec<f64>,
    /// λ̄, μ̄ (all contacts)
    lnb: Vec<f64>,
    ltb: Vec<f64>,
    mub: Vec<f64>,
    /// −Σ_t y_t (all contacts), the controls' step
    ysn: Vec<f64>,
    yst: Vec<f64>,
    terms: Terms,
    island: IslandVjpScratch,
    /// each contact's component (`usize::MAX`: no DoF)
    ccomp: Vec<usize>,
    /// a pass's sums by lane and component (`LANES` × nv)
    acc: Vec<f64>,
    /// ḡᵀ [A B C]: the state's tangent q, v (2nv), the generalized forces (nv), the selected parameters
    pub(super) xbar: Vec<f64>,
    /// the integration's dual pass
    aq: Vec<Vector>,
    av: Vec<Vector>,
    aq1: Vec<Vector>,
    av1: Vec<Vector>,
}

impl NcpSolver {
    /// ḡᵀ [A B C] of the step by reverse mode into the tangent workspace's `xbar` (`NcpWorkspace::vjp_rows`);
    /// false when the step has an impact or a cascade island on redundant impulses (`IslandJvp::ill`): then the
    /// forward Jacobians are in `cols` instead (state, controls, the selected parameters).
    pub(crate) fn vjp_rows_into(
        &self,
        x: &ContactStep,
        ws: &mut NcpWorkspace,
        sel: &ParamSelection,
        g_out: &GenState,
        report: &mut NcpReport,
    ) -> Result<bool, SolverError> {
        ws.with_tangent(x.model, |ws, tw| self.vjp_in(x, ws, tw, sel, g_out, report))
    }

    fn vjp_in(
        &self,
        x: &ContactStep,
        ws: &mut NcpWorkspace,
        tw: &mut TangentWorkspace,
        sel: &ParamSelection,
        g_out: &GenState,
        report: &mut NcpReport,
    ) -> Result<bool, SolverError> {
        self.prepare(x, ws, tw, sel, report)?;
        let po = self.options.prelude();
        let mut b = std::mem::take(&mut tw.bufs);
        let mut a = std::mem::take(&mut tw.adj);
        tw.reversed = !(ws.tape.has_impact || tw.step.any_ill());
        let r = if !tw.reversed {
            let (nv, ns) = (ws.dm.nv, sel.len());
            let mut cols = std::mem::replace(&mut tw.cols, DMatrix::zeros(0, 0));
            reshape_zeroed(&mut cols, 2 * nv, 3 * nv + ns + x.contacts.len() + 1);
            let r = tw.forward_passes(x, ws, &po, sel, ns, &mut b, &mut cols);
            tw.cols = cols;
            r.map(|p| {
                tw.passes = p;
                false
            })
        } else {
            tw.adjoint(x, ws, &po, sel, g_out, &mut b, &mut a).map(|p| {
                tw.passes = p;
                true
            })
        };
        (tw.bufs, tw.adj) = (b, a);
        r
    }
}

impl NcpWorkspace {
    /// ḡᵀ [A B C] of the last `NcpSolver::vjp_rows_into` (3nv + |sel|).
    pub(crate) fn vjp_rows(&self) -> &[f64] {
        self.tan.as_ref().map_or(&[], |t| &t.adj.xbar)
    }
}

impl TangentWorkspace {
    /// Steps 1–3 of the module's sweep (after `prepare`, no impact); returns the dual passes.
    #[allow(clippy::too_many_arguments)]
    fn adjoint(
        &self,
        x: &ContactStep,
        ws: &NcpWorkspace,
        po: &PreludeOptions,
        sel: &ParamSelection,
        g_out: &GenState,
        b: &mut PassScratch,
        a: &mut AdjointScratch,
    ) -> Result<usize, SolverError> {
        let (model, nv, nc, ns) = (x.model, ws.dm.nv, x.contacts.len(), sel.len());
        let (pre, ph) = (&ws.pre, &ws.tape.step);
        // ḡ in the tangent at q⁺
        a.gq.clear();
        a.gq.resize(nv, 0.0);
        ambient_to_tangent_into(model, &self.next.q, &g_out.q, &mut a.gq);
        a.g.clear();
        a.g.extend(a.gq.iter().chain(&g_out.v[..nv]).copied());
        // the step's impulses and v⁺
        a.ln.clear();
        a.ln.extend((0..nc).map(|i| ph.ln.get(i).copied().unwrap_or(0.0)));
        a.lt.clear();
        a.lt.extend((0..2 * nc).map(|k| ph.lt.get(k).copied().unwrap_or(0.0)));
        if nc > 0 {
            apply_impulses_into(pre, &a.ln, &a.lt, &mut a.vplus);
        } else {
            a.vplus.clone_from(&pre.vp);
        }
        // 1. v̄⁺: lane r seeds DoF r of every joint
        let vec_dm = self.vec_dm.as_ref().expect("built by prepare");
        lift_into(&x.s.q, &mut a.aq);
        lift_into(&a.vplus, &mut a.av);
        for jt in 0..vec_dm.parent.len() {
            let vs = vec_dm.v_start[jt];
            for r in 0..vec_dm.joint[jt].nv {
                a.av[vs + r].set_lane(r, 1.0);
            }
        }
        a.aq1.clone_from(&a.aq);
        a.av1.clone_from(&a.av);
        advance_into(vec_dm, &a.aq, &a.av, Vector::c(x.dt), &mut a.aq1, &mut a.av1);
        a.vbar.clear();
        a.vbar.resize(nv, 0.0);
        for jt in 0..vec_dm.parent.len() {
            let (vs, jn) = (vec_dm.v_start[jt], vec_dm.joint[jt].nv);
            for r in 0..jn {
                let t = lane_tangent(vec_dm, jt, &self.next, &a.aq1, r);
                a.vbar[vs + r] = (0..jn).map(|i| a.g[vs + i] * t[i] + a.g[nv + vs + i] * a.av1[vs + i].lane(r)).sum();
            }
        }
        // λ̄ = J M⁻¹ v̄⁺
        a.lnb.clear();
        a.lnb.resize(nc, 0.0);
        a.ltb.clear();
        a.ltb.resize(2 * nc, 0.0);
        let row_bar = |a: &mut AdjointScratch, r: usize, v: f64| match r % 3 {
            0 => a.lnb[r / 3] = v,
            m => a.ltb[2 * (r / 3) + m - 1] = v,
        };
        if pre.aba {
            for r in 0..3 * nc {
                let v = (0..nv).map(|k| pre.minv_jt[r * nv + k] * a.vbar[k]).sum();
                row_bar(a, r, v);
            }
        } else {
            a.w.clone_from(&a.vbar);
            ltl_solve_in_place(&pre.l, &pre.lambda, &mut a.w);
            for r in 0..3 * nc {
                let v = pre.row_dot(r % 3, r / 3, &a.w);
                row_bar(a, r, v);
            }
        }
        // 2. the islands' adjoints
        a.mub.clear();
        a.mub.resize(nc, 0.0);
        a.terms.clear();
        let AdjointScratch { lnb, ltb, island, terms, mub, .. } = a;
        self.step.vjp(ph, pre, !ws.split_islands, lnb, ltb, island, terms, mub);
        let comp = &self.groups.comp;
        a.ccomp.clear();
        a.ccomp.extend((0..nc).map(|i| pre.pattern.support(i).first().map_or(usize::MAX, |&k| comp[k])));
        a.xbar.clear();
        a.xbar.resize(3 * nv + ns, 0.0);
        // 4. ū = Δt M⁻¹ Sᵀ (v̄⁺ − Jᵀ Σ_t y_t) (module doc); with the articulated-body solve, u lanes in the passes
        let kinds = if pre.aba { 3 } else { 2 };
        if kinds == 2 {
            a.ysn.clear();
            a.ysn.resize(nc, 0.0);
            a.yst.clear();
            a.yst.resize(2 * nc, 0.0);
            for t in 0..a.terms.n {
                a.ysn.iter_mut().zip(&a.terms.yn[t]).for_each(|(s, y)| *s -= y);
                a.yst.iter_mut().zip(&a.terms.yt[t]).for_each(|(s, y)| *s -= y);
            }
            a.w.clone_from(&a.vbar);
            pre.add_jt(&a.ysn, &a.yst, &mut a.w);
            implicit_gyroscopic_vjp(&ws.dm, &x.s.v, x.dt, &mut a.w);
            ltl_solve_in_place(&pre.l, &pre.lambda, &mut a.w);
            for k in 0..nv {
                a.xbar[2 * nv + k] = x.dt * a.w[k];
            }
        }
        // 3. the dual passes of φ (q and v; u too with the articulated-body solve)
        b.dir_of.clear();
        b.dir_of.resize(LANES * nv, usize::MAX);
        let c = self.ctx(x, ws, po);
        let vec_passes = (kinds * self.groups.n_max).div_ceil(LANES);
        for p in 0..vec_passes {
            let (lanes, n) = grouped_lanes(&self.groups, p, kinds);
            adjoint_pass(&c, vec_dm, &mut b.lanes, &lanes[..n], &mut b.dir_of, a)?;
        }
        for (t, &i) in sel.indices.iter().enumerate() {
            let (dm, mat) = self.param_model(Some(i));
            let lane = Lane { all: Some(3 * nv + t), mat, ..NO_LANE };
            adjoint_pass(&c, dm, &mut b.one, &[lane], &mut b.dir_of, a)?;
        }
        Ok(vec_passes + ns)
    }
}

/// One dual pass of φ (module doc, step 3): the smooth code on T without the Delassus blocks at the step's
/// impulses and at each term's; each lane's sum, component by component, into the direction it seeded there
/// (`a.xbar`; every component: `all`).
fn adjoint_pass<T: Lanes>(
    c: &PassCtx,
    dm: &DynModel<T>,
    b: &mut PassBufs<T>,
    lanes: &[Lane],
    dir_of: &mut [usize],
    a: &mut AdjointScratch,
) -> Result<(), SolverError> {
    let (nv, nc, nl) = (dm.nv, c.contacts.len(), lanes.len());
    seed_pass(c, dm, b, lanes, dir_of, false)?;
    let AdjointScratch { g, ln, lt, terms, ccomp, mub, acc, xbar, .. } = a;
    // ḡᵀ F(x, λ)
    lift_into(ln, &mut b.ln);
    lift_into(lt, &mut b.lt);
    b.advance(dm, c.dt, nc > 0);
    let pre = &b.pre;
    acc.clear();
    acc.resize(nl * nv, 0.0);
    for (j, l) in lanes.iter().enumerate() {
        let skip = |k: usize| l.all.is_none() && dir_of[j * nv + c.comp[k]] == usize::MAX;
        let acc = &mut acc[j * nv..(j + 1) * nv];
        lane_rows(dm, c.next, &b.q1, &b.v1, j, skip, |r, k, x| acc[c.comp[k]] += g[r] * x);
    }
    // −Σ_t y_tᵀ r(x, λ_t), r_n = J_n v(λ_t) + (b_n − J_n v^p), r_t = J_t v(λ_t)
    for t in 0..terms.n {
        lift_into(&terms.ln[t], &mut b.ln);
        lift_into(&terms.lt[t], &mut b.lt);
        apply_impulses_into(pre, &b.ln, &b.lt, &mut b.vt);
        let (yn, yt) = (&terms.yn[t], &terms.yt[t]);
        for i in (0..nc).filter(|&i| ccomp[i] != usize::MAX) {
            let cc = ccomp[i];
            for (m, y) in [yn[i], yt[2 * i], yt[2 * i + 1]].into_iter().enumerate().filter(|&(_, y)| y != 0.0) {
                let mut r = pre.row_dot(m, i, &b.vt);
                if m == 0 {
                    r = r - pre.row_dot(0, i, &pre.vp) + pre.bn[i];
                }
                for j in 0..nl {
                    acc[j * nv + cc] -= y * r.lane(j);
                }
            }
        }
    }
    // μ̄ᵀ μ(x)
    for i in (0..nc).filter(|&i| mub[i] != 0.0 && ccomp[i] != usize::MAX) {
        for j in 0..nl {
            acc[j * nv + ccomp[i]] += mub[i] * b.geoms[i].mu.lane(j);
        }
    }
    for (j, l) in lanes.iter().enumerate() {
        let row = &acc[j * nv..(j + 1) * nv];
        match l.all {
            Some(d) => xbar[d] += row.iter().sum::<f64>(),
            None => {
                for (k, &v) in row.iter().enumerate() {
                    let d = dir_of[j * nv + k];
                    if d != usize::MAX {
                        xbar[d] += v;
                    }
                }
            }
        }
    }
    unseed(c, lanes, dir_of, nv);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::ncp::{NcpGradient, NcpOptions, NcpSolver};
    use crate::solver::{DiffSolver, Solver};
    use torsion_model::{Control, GenState, Model, ParamSelection};

    const DT: f64 = 0.005;

    /// Floor + boxes (1 kg, half 0.1 m, μ 0.5; euler in degrees) at `bodies`, as bench/contact_scaling's scenes.
    fn boxes(bodies: &[(f64, f64, f64, f64)]) -> Model {
        let xml: String = bodies
            .iter()
            .map(|(x, y, z, e)| {
                format!(
                    r#"<body pos="{x} {y} {z}" euler="{e} {} 0"><freejoint/><geom type="box" size="0.1 0.1 0.1"
                    mass="1" friction="0.4"/></body>"#,
                    0.5 * e
                )
            })
            .collect();
        let xml = format!(
            r#"<mujoco><option timestep="{DT}"/><worldbody><geom type="plane" size="50 50 0.1" friction="0.5"/>{xml}
            </worldbody></mujoco>"#
        );
        torsion_model::io::mjcf::load_mjcf_str(&xml, "boxes.xml", None).unwrap()
    }

    /// The scenes of issue 15's check (name, model, state, controls): one box at rest, a box sliding on four
    /// corners, 10 boxes on a grid and 2 stacks of 5 at rest, a tilted box landing on an edge, the same sliding on
    /// a corner (differentiated through the cascade: `solver`), a box in flight (no contact).
    fn scenes() -> Vec<(&'static str, Model, GenState, Vec<f64>)> {
        let settle = |m: &Model, mut s: GenState, n: usize| {
            let solver = solver("");
            let mut ws = Solver::workspace(&solver, m).unwrap();
            let u = Control::zeros(m.nv());
            for _ in 0..n {
                let mut o = s.clone();
                solver.step(m, &s, &u, DT, &mut o, &mut ws, None).unwrap();
                s = o;
            }
            s
        };
        let at_rest = |m: Model, n: usize| {
            let s = settle(&m, GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]), n);
            (m, s)
        };
        let mut out = vec![];
        let (m, s) = at_rest(boxes(&[(0.0, 0.0, 0.1005, 0.0)]), 30);
        out.push(("one box at rest", m, s, vec![0.1, -0.2, 0.0, 0.3, 0.2, -0.1]));
        let (m, mut s) = at_rest(boxes(&[(0.0, 0.0, 0.1005, 0.0)]), 30);
        s.v[3] = 1.0;
        s.v[4] = 0.4;
        let s = settle(&m, s, 2);
        out.push(("sliding box", m, s, vec![0.0, 0.0, 0.1, 0.5, -0.2, 0.0]));
        let (m, mut s) = at_rest(boxes(&[(0.0, 0.0, 0.1005, 0.0)]), 30);
        (s.v[2], s.v[3], s.v[4]) = (1.0, 1.0, 0.4);
        let s = settle(&m, s, 2);
        out.push(("sliding, yawing box", m, s, vec![0.0, 0.0, 0.1, 0.5, -0.2, 0.0]));
        let grid: Vec<_> = (0..10).map(|i| (0.5 * (i % 4) as f64, 0.5 * (i / 4) as f64, 0.1005, 0.0)).collect();
        let (m, s) = at_rest(boxes(&grid), 30);
        let nv = m.nv();
        out.push(("10 boxes, grid", m, s, (0..nv).map(|k| 0.05 * (k % 7) as f64 - 0.15).collect()));
        let stacks: Vec<_> =
            (0..10).map(|i| (0.5 * (i / 5) as f64, 0.0, 0.101 + 0.201 * (i % 5) as f64, 0.0)).collect();
        let (m, s) = at_rest(boxes(&stacks), 40);
        let nv = m.nv();
        out.push(("2 stacks of 5", m, s, (0..nv).map(|k| 0.03 * (k % 5) as f64 - 0.06).collect()));
        let m = boxes(&[(0.0, 0.0, 0.14, 12.0)]);
        let s = settle(&m, GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]), 6);
        out.push(("tilted box on an edge", m, s, vec![0.0, 0.1, 0.0, 0.2, 0.0, 0.0]));
        let m = boxes(&[(0.0, 0.0, 0.14, 12.0)]);
        let mut s = settle(&m, GenState::new(m.qpos0.clone(), vec![0.0; m.nv()]), 6);
        s.v[3] = 0.8;
        let s = settle(&m, s, 1);
        out.push(("tilted box sliding on a corner (cascade)", m, s, vec![0.0, 0.1, 0.0, 0.2, 0.1, 0.0]));
        let m = boxes(&[(0.0, 0.0, 1.0, 30.0)]);
        let s = GenState::new(m.qpos0.clone(), vec![0.3, -0.2, 0.5, 1.0, 0.0, 0.5]);
        out.push(("box in flight", m, s, vec![0.1, 0.0, 0.0, 0.0, 0.2, 0.3]));
        out
    }

    /// A box's mass and the floor's and a box's friction (`shape_friction[·]`).
    fn selection(m: &Model) -> ParamSelection {
        let mass = ParamSelection::by_prefix(m, "body_mass[").indices;
        let mu = ParamSelection::by_prefix(m, "shape_friction[").indices;
        ParamSelection { indices: vec![mass[0], mu[0], mu[1]] }
    }

    /// The output cotangent of the checks (ambient q, v).
    fn g_out(m: &Model) -> GenState {
        GenState::new(
            (0..m.nq()).map(|i| (1.3 * i as f64 + 0.2).sin()).collect(),
            (0..m.nv()).map(|i| (0.7 * i as f64).cos()).collect(),
        )
    }

    /// The solver of a scene: defaults, or the cascade derivative on every island.
    fn solver(name: &str) -> NcpSolver {
        let gradient = if name.contains("cascade") { NcpGradient::Cascade } else { NcpGradient::Auto };
        NcpSolver::new(NcpOptions { gradient, ..NcpOptions::default() })
    }

    /// ḡᵀ[A B C] (g_s.q, g_s.v, g_u, g_θ concatenated) of one recorded step, by reverse mode or by the forward
    /// Jacobians; and whether the reverse mode was taken.
    fn vjp(
        solver: &NcpSolver,
        m: &Model,
        s: &GenState,
        u: &[f64],
        sel: &ParamSelection,
        reverse: bool,
    ) -> (Vec<f64>, bool) {
        let mut ws = Solver::workspace(solver, m).unwrap();
        let mut rec = solver.record(m);
        let mut o = s.clone();
        solver.step(m, s, &Control::from_torques(u), DT, &mut o, &mut ws, Some(&mut rec)).unwrap();
        ws.ncp.set_reverse_vjp(reverse);
        let mut gs = GenState::new(vec![0.0; m.nq()], vec![0.0; m.nv()]);
        let (mut gu, mut gth) = (vec![0.0; m.nv()], vec![0.0; sel.len()]);
        solver.step_vjp(m, &rec, &g_out(m), &mut gs, &mut gu, sel, &mut gth, &mut ws).unwrap();
        (gs.q.iter().chain(&gs.v).chain(&gu).chain(&gth).copied().collect(), ws.ncp.last_vjp_reversed())
    }

    /// The reverse-mode `step_vjp` equals the forward Jacobians' product (the same derivative, island by island:
    /// fixed point or cascade) to ≤ 1e-10 relative on every scene, with mass and friction parameters selected,
    /// and takes the reverse mode on each (the box sliding on four corners took the forward Jacobians while its
    /// passes' cascade on redundant impulses answered it; the direct solve answers it since session 11).
    #[test]
    fn reverse_vjp_matches_forward_jacobians() {
        for (name, m, s, u) in scenes() {
            let (solver, sel) = (solver(name), selection(&m));
            let ((rev, reversed), (fwd, _)) =
                (vjp(&solver, &m, &s, &u, &sel, true), vjp(&solver, &m, &s, &u, &sel, false));
            let scale = fwd.iter().fold(0.0f64, |a, x| a.max(x.abs()));
            let err = rev.iter().zip(&fwd).fold(0.0f64, |a, (r, f)| a.max((r - f).abs())) / scale;
            eprintln!("{name}: reverse vs forward {err:.2e} (max |ḡ_in| {scale:.2e}; reverse mode taken: {reversed})");
            assert!(scale > 0.0 && rev.iter().all(|x| x.is_finite()), "{name}: zero or not finite");
            assert!(err <= 1e-10, "{name}: reverse vs forward {err:e}");
            assert!(reversed, "{name}: reverse mode not taken");
        }
    }

    /// The reverse-mode `step_vjp` against central differences (h = 1e-6) of ḡ · step(s, u, θ) in v, u, the
    /// boxes' positions (ambient q) and the selected mass and friction, on a sliding box, a box on an edge, the two
    /// stacks at rest and a box sliding and yawing on four corners (redundant sliding impulses: the projection off
    /// the null space, `fixed_point::project_off_null`, taken in reverse).
    #[test]
    fn reverse_vjp_matches_central_differences() {
        let names = [
            "tilted box on an edge",
            "tilted box sliding on a corner (cascade)",
            "2 stacks of 5",
            "sliding, yawing box",
        ];
        for (name, m, s, u) in scenes().into_iter().filter(|c| names.contains(&c.0)) {
            let solver = solver(name);
            let (nq, nv) = (m.nq(), m.nv());
            let sel = selection(&m);
            let (an, reversed) = vjp(&solver, &m, &s, &u, &sel, true);
            assert!(reversed, "{name}: reverse mode not taken");
            let g = g_out(&m);
            let mut ws = Solver::workspace(&solver, &m).unwrap();
            let mut loss = |m: &Model, s: &GenState, u: &[f64]| {
                let mut o = s.clone();
                solver.step(m, s, &Control::from_torques(u), DT, &mut o, &mut ws, None).unwrap();
                o.q.iter().zip(&g.q).chain(o.v.iter().zip(&g.v)).map(|(a, b)| a * b).sum::<f64>()
            };
            // the yawing box's redundant sliding impulses: h = 1e-5 and 5e-6 (module `fixed_point`, docs/gradients.md
            // "Redundant sliding impulses": the selection's curvature; 2.6e-6 at h = 1e-5 or 1e-4, 1.2e-2 before
            // the projection)
            let (h, tol) = if name.contains("yawing") { (1e-5, 5e-6) } else { (1e-6, 1e-6) };
            let (mut worst, mut scale) = (0.0f64, 0.0f64);
            // (index into `an`, the perturbed loss at ±h)
            let mut check = |k: usize, f: &mut dyn FnMut(f64) -> f64| {
                let fd = (f(h) - f(-h)) / (2.0 * h);
                worst = worst.max((fd - an[k]).abs());
                scale = scale.max(fd.abs());
            };
            // (x, y: the contact frames' distance is not differentiated along z, forward mode alike)
            for b in 0..nq / 7 {
                for c in 0..2 {
                    let k = 7 * b + c;
                    check(k, &mut |e| {
                        let mut p = s.clone();
                        p.q[k] += e;
                        loss(&m, &p, &u)
                    });
                }
            }
            for k in 0..nv {
                check(nq + k, &mut |e| {
                    let mut p = s.clone();
                    p.v[k] += e;
                    loss(&m, &p, &u)
                });
                check(nq + nv + k, &mut |e| {
                    let mut uu = u.clone();
                    uu[k] += e;
                    loss(&m, &s, &uu)
                });
            }
            let table = m.param_table();
            for (t, &i) in sel.indices.iter().enumerate() {
                check(nq + 2 * nv + t, &mut |e| {
                    let mut mm = m.clone();
                    let one = ParamSelection { indices: vec![i] };
                    mm.params_set(&one, &[m.param_get(table.kinds[i]) + e]).unwrap();
                    loss(&mm, &s, &u)
                });
            }
            let err = worst / scale;
            eprintln!("{name}: reverse step_vjp vs central differences {err:.2e} (max |FD| {scale:.2e})");
            assert!(err <= tol, "{name}: {err:e}");
        }
    }
}
