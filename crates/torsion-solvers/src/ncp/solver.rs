//! The contact stepper as a `Solver` / `DiffSolver` (the same contract as XPBD and Featherstone): collision
//! detection (torsion-collision) at the step's configuration, then the staggered-projection step. The pair's
//! friction coefficient is the larger of the two shapes' `friction[0]` (MuJoCo's default combination), its
//! restitution the larger of their `restitution`: both are model parameters (`shape_friction[·]`,
//! `shape_restitution[·]`), differentiated through the shape supplying the maximum (`contact::frames::pair_source`).
//! The contact frames used by a step are recorded with it, so its derivatives see the same frames. The warm
//! start (impulses and tangent t1 by contact id) is `GenState::warm`: read from the input state (the tangents
//! continue from its t1), written to the output — nothing carries over in the workspace (design.md §3).
use super::staggered::{NcpReport, NcpSolver, NcpWorkspace};
use crate::contact::frames::{detect_into, merge_exact_duplicates, ContactFrame};
use crate::contact::ContactStep;
use crate::generalized::{
    add_input_cotangents, check_nq, transposed_jacobian_product_with, wrench_vjp, ContactWarmStart, GenState,
    ProductScratch, StepInput, WrenchTerm,
};
use crate::solver::{check_grad_sizes, DiffSolver, Solver, SolverError, StepInfo, StepJacobians};
use torsion_collision::{CollisionWorld, Contacts};
use torsion_model::{Control, Model, ParamSelection};

/// Step workspace: the contact step's buffers, the collision world and the last contact set.
pub struct NcpSimWorkspace {
    pub ncp: NcpWorkspace,
    pub world: CollisionWorld,
    pub contacts: Contacts,
    /// the contacts of the last step, as the stepper saw them
    pub frames: Vec<ContactFrame>,
    /// the last step's report (ADMM results, NCP residuals, impulses)
    pub report: NcpReport,
    /// the bodies' world poses for collision detection
    poses: Vec<(torsion_math::Vec3, torsion_math::Quat)>,
    /// `step_vjp`'s: the recomputed step's report, the Jacobians, the product's buffers
    vjp_report: NcpReport,
    vjp_jac: StepJacobians,
    vjp_product: ProductScratch,
    /// the reverse mode's row products ḡᵀ[A B C] and its ambient q scratch
    vjp_rows: Vec<f64>,
    vjp_gq: Vec<f64>,
    /// the body wrenches' generalized forces and their q-columns (`Control::body_wrench`)
    wrench: WrenchTerm,
}

/// What `step` saves for `step_vjp` (the input state carries the warm start, so the same passes are recomputed).
#[derive(Clone, Debug, Default)]
pub struct NcpRecord {
    input: StepInput,
    /// the contact frames the step took (its detection)
    frames: Vec<ContactFrame>,
}

/// A, B, C from the tangent Jacobians' columns (state 2nv, controls nv, then the `ns` selected parameters) into
/// `out` (reshaped only when its shapes differ).
fn copy_jacobians(cols: &nalgebra::DMatrix<f64>, nv: usize, ns: usize, out: &mut StepJacobians) {
    let n = 2 * nv;
    if out.a.shape() != (n, n) || out.b.shape() != (n, nv) || out.c.shape() != (n, ns) {
        *out = StepJacobians::zeros(n, nv, ns);
    }
    out.a.copy_from(&cols.columns(0, n));
    out.b.copy_from(&cols.columns(n, nv));
    out.c.copy_from(&cols.columns(3 * nv, ns));
}

fn dyn_err(e: torsion_dynamics::DynError) -> SolverError {
    SolverError::BadInput { solver: "ncp", problem: e.to_string() }
}

fn collision_err(e: torsion_collision::CollisionError) -> SolverError {
    crate::contact::frames::collision_err("ncp")(e)
}

impl NcpSolver {
    /// Shape pairs overlapping deeper than the contact margin at configuration `q` (e.g. a model's initial
    /// pose), one message each: "initial overlap: shapes 'a' (body 'x') and 'b' (body 'y') penetrate by 0.05 m
    /// …". Callers print them (the CLI does, at `--q0`); empty when contacts are disabled.
    pub fn initial_overlaps(&self, model: &Model, q: &[f64]) -> Result<Vec<String>, SolverError> {
        let mut warnings = vec![];
        if !model.contact_enabled {
            return Ok(warnings);
        }
        let mut world = CollisionWorld::new(model, self.options.collision.clone()).map_err(collision_err)?;
        let mut contacts = Contacts::default();
        let poses =
            model.forward_kinematics(q).map_err(|e| SolverError::BadInput { solver: "ncp", problem: e.to_string() })?;
        world.detect(&poses, &mut contacts).map_err(collision_err)?;
        let margin = self.options.collision.margin;
        let mut seen = vec![];
        for c in contacts.contacts.iter().filter(|c| c.distance < -margin) {
            if seen.contains(&(c.geom_a, c.geom_b)) {
                continue;
            }
            seen.push((c.geom_a, c.geom_b));
            let depth = contacts
                .contacts
                .iter()
                .filter(|d| (d.geom_a, d.geom_b) == (c.geom_a, c.geom_b))
                .fold(0.0f64, |m, d| m.max(-d.distance));
            let (sa, sb) = (&model.shapes[c.geom_a], &model.shapes[c.geom_b]);
            warnings.push(format!(
                "initial overlap: shapes '{}' (body '{}') and '{}' (body '{}') penetrate by {depth:.4} m at the \
                 given configuration (contact margin {margin} m)",
                sa.name, model.body_name[sa.body], sb.name, model.body_name[sb.body]
            ));
        }
        Ok(warnings)
    }

    /// The contacts at configuration q (body poses by the dynamics' forward kinematics), as contact frames; the
    /// tangents continue from the t1 of the same contact in `warm` (the input state's warm start).
    pub fn detect(
        &self,
        model: &Model,
        ws: &mut NcpSimWorkspace,
        q: &[f64],
        warm: &ContactWarmStart,
    ) -> Result<(), SolverError> {
        let NcpSimWorkspace { ncp, world, contacts, frames, poses, .. } = ws;
        // the dynamics model at the current parameters (the joint anchors place the bodies)
        ncp.cache.refresh(model, &mut ncp.dm).map_err(dyn_err)?;
        detect_into("ncp", model, world, &ncp.dm, &mut ncp.d, q, warm, poses, contacts, frames)?;
        merge_exact_duplicates(frames);
        Ok(())
    }
}

impl Solver for NcpSolver {
    type State = GenState;
    type Workspace = NcpSimWorkspace;
    type Record = NcpRecord;

    fn name(&self) -> &'static str {
        "ncp"
    }

    fn workspace(&self, model: &Model) -> Result<NcpSimWorkspace, SolverError> {
        Ok(NcpSimWorkspace {
            ncp: self.contact_workspace(model)?,
            world: CollisionWorld::new(model, self.options.collision.clone()).map_err(collision_err)?,
            contacts: Contacts::default(),
            frames: vec![],
            report: NcpReport::default(),
            poses: vec![],
            vjp_report: NcpReport::default(),
            vjp_jac: StepJacobians::zeros(0, 0, 0),
            vjp_product: ProductScratch::default(),
            vjp_rows: vec![],
            vjp_gq: vec![],
            wrench: WrenchTerm::default(),
        })
    }

    fn record(&self, _model: &Model) -> NcpRecord {
        NcpRecord::default()
    }

    fn step(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        out: &mut GenState,
        ws: &mut NcpSimWorkspace,
        rec: Option<&mut NcpRecord>,
    ) -> Result<StepInfo, SolverError> {
        check_nq("ncp", model, s)?;
        self.detect(model, ws, &s.q, &s.warm)?;
        // `detect` brought `ncp.dm` to the model's parameters
        let NcpSimWorkspace { ncp, frames, report, wrench, .. } = ws;
        let uj = wrench.effective(&ncp.dm, &mut ncp.d, &s.q, u).map_err(dyn_err)?;
        if let Some(r) = rec {
            // copied into the record's buffers (no allocation once they have grown)
            r.input.save(s, uj, &u.body_wrench, dt);
            r.frames.clone_from(frames);
        }
        // `detect` refreshed `ncp.dm` (θ compared once per step, issue 13)
        let x = ContactStep { model, s, u: uj, dt, contacts: frames };
        self.check(ncp, &x)?;
        self.step_refreshed(&x, ncp, out, report)?;
        let r = &*report;
        let passes = r.qp.len() + r.impact.as_ref().map_or(0, |i| i.qp.len());
        let mut admm = r.qp.iter().chain(&r.qcqp).chain(r.impact.iter().flat_map(|i| i.qp.iter().chain(&i.qcqp)));
        // with the residual stop, every island of both phases at the NCP tolerance: capped passes kept above it
        // (a rejected direct solve's fallback) are not converged, whatever their ADMM sub-problems did
        let t = &ncp.tape;
        let ncp_converged =
            self.options.residual_tolerance <= 0.0 || (t.step.converged && (!t.has_impact || t.impact.converged));
        Ok(StepInfo {
            iterations: passes,
            contacts: r.contacts,
            residual: r
                .residuals
                .signorini
                .max(r.residuals.cone)
                .max(r.residuals.mdp_sliding)
                .max(r.residuals.mdp_sticking),
            converged: ncp_converged && admm.all(|i| i.converged),
            fallbacks: r.direct_rejected,
            ..StepInfo::new("ncp")
        })
    }
}

impl DiffSolver for NcpSolver {
    /// ḡᵀ [A B C] by reverse mode (`adjoint.rs`: one adjoint sweep through the island solves, the smooth part's
    /// gradient by the grouped dual passes without the Delassus blocks), at the recorded contact frames and the
    /// input state's warm start; a step with an impact, or with the reverse mode off
    /// (`NcpWorkspace::set_reverse_vjp`), multiplies the forward-mode Jacobians (`tangent.rs`) instead.
    #[allow(clippy::too_many_arguments)]
    fn step_vjp(
        &self,
        model: &Model,
        rec: &NcpRecord,
        g_out: &GenState,
        g_s: &mut GenState,
        g_u: &mut [f64],
        sel: &ParamSelection,
        g_theta: &mut [f64],
        ws: &mut NcpSimWorkspace,
    ) -> Result<(), SolverError> {
        let (s, inp) = (rec.input.state("ncp")?, &rec.input);
        check_grad_sizes("ncp", model.nv(), g_u, sel, g_theta)?;
        let x = ContactStep { model, s, u: &inp.u, dt: inp.dt, contacts: &rec.frames };
        let nv = model.nv();
        if ws.ncp.reverse_vjp() && self.vjp_rows_into(&x, &mut ws.ncp, sel, g_out, &mut ws.vjp_report)? {
            let rows = &mut ws.vjp_rows;
            rows.clear();
            rows.extend_from_slice(ws.ncp.vjp_rows());
            let (ra, rest) = rows.split_at_mut(2 * nv);
            let (rb, rc) = rest.split_at(nv);
            let n = &mut ws.ncp;
            ws.wrench.add_state_vjp(&n.dm, &mut n.d, &s.q, &inp.wrench, rb, ra).map_err(dyn_err)?;
            add_input_cotangents(model, &s.q, ra, rb, rc, g_s, g_u, g_theta, &mut ws.vjp_gq);
            return Ok(());
        }
        // with the reverse mode on, `vjp_rows_into` declined (an impact, a singular cascade) and left the forward
        // Jacobians in the workspace
        if !ws.ncp.reverse_vjp() {
            self.jacobians_into(&x, &mut ws.ncp, sel, false, &mut ws.vjp_report)?;
        }
        let tan = ws.ncp.tangent();
        copy_jacobians(&tan.cols, nv, sel.len(), &mut ws.vjp_jac);
        let n = &mut ws.ncp;
        ws.wrench.add_state_columns(&n.dm, &mut n.d, &s.q, &inp.wrench, &mut ws.vjp_jac).map_err(dyn_err)?;
        let tan = ws.ncp.tangent();
        let (j, sc) = (&ws.vjp_jac, &mut ws.vjp_product);
        transposed_jacobian_product_with(model, &s.q, &tan.next.q, j, g_out, g_s, g_u, g_theta, sc);
        Ok(())
    }

    /// Collision detection at s.q in the caller's workspace (its frames and report are the step's), then the
    /// tangent Jacobians.
    #[allow(clippy::too_many_arguments)]
    fn step_jacobians_into(
        &self,
        model: &Model,
        s: &GenState,
        u: &Control,
        dt: f64,
        sel: &ParamSelection,
        ws: &mut NcpSimWorkspace,
        out: &mut StepJacobians,
    ) -> Result<(), SolverError> {
        self.detect(model, ws, &s.q, &s.warm)?;
        // `detect` brought `ncp.dm` to the model's parameters
        let NcpSimWorkspace { ncp, frames, report, wrench, .. } = ws;
        let uj = wrench.effective(&ncp.dm, &mut ncp.d, &s.q, u).map_err(dyn_err)?;
        // `uj` borrows `wrench`'s buffer: the Jacobians read a copy-free slice, then the q-columns are added
        self.jacobians_into(&ContactStep { model, s, u: uj, dt, contacts: frames }, ncp, sel, false, report)?;
        copy_jacobians(&ncp.tangent().cols, model.nv(), sel.len(), out);
        wrench.add_state_columns(&ncp.dm, &mut ncp.d, &s.q, &u.body_wrench, out).map_err(dyn_err)?;
        Ok(())
    }

    fn wrench_vjp(
        &self,
        model: &Model,
        rec: &NcpRecord,
        g_u: &[f64],
        g_w: &mut [f64],
        ws: &mut NcpSimWorkspace,
    ) -> Result<(), SolverError> {
        let _ = model;
        let s = rec.input.state("ncp")?;
        wrench_vjp("ncp", &ws.ncp.dm, &mut ws.ncp.d, &s.q, g_u, g_w)
    }

    fn control_dim(&self, model: &Model) -> usize {
        model.nv()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ncp::NcpOptions;

    /// The trait's `step_jacobians` (collision detection inside) against central differences of `step`, for the
    /// controls of a box sliding on an MJCF plane (the full checks are in tests/ncp_gradients.rs, ncp_solver.rs).
    #[test]
    fn step_jacobians_b_matches_finite_differences() {
        let xml = r#"<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 0.1" friction="0.4"/>
            <body pos="0 0 0.2"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.4"/></body>
            </worldbody></mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "box.xml", None).unwrap();
        let solver = NcpSolver::new(NcpOptions::default());
        let s = GenState::new(vec![0.0, 0.0, 0.0999, 1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 1.0, 0.2, 0.0]);
        let u = [0.0, 0.0, 0.0, 0.5, -0.3, 0.0];
        let jac = solver.step_jacobians(&m, &s, &Control::from_torques(&u), 0.01, &ParamSelection::none()).unwrap();
        let next = |uu: &[f64]| {
            let mut ws = Solver::workspace(&solver, &m).unwrap();
            let mut o = s.clone();
            solver.step(&m, &s, &Control::from_torques(uu), 0.01, &mut o, &mut ws, None).unwrap();
            o
        };
        let base = next(&u);
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for k in 3..5 {
            let (mut up, mut um) = (u, u);
            up[k] += h;
            um[k] -= h;
            let (p, q) = (solver.local_diff(&m, &base, &next(&up)), solver.local_diff(&m, &base, &next(&um)));
            for r in 0..12 {
                worst = worst.max(((p[r] - q[r]) / (2.0 * h) - jac.b[(r, k)]).abs());
            }
        }
        assert!(worst < 1e-7, "B vs FD: {worst:e}");
    }
}
