//! Spec 003 §3.9: the learned contact models' inputs and outputs on the rods of the linear contact model
//! (`tensegrity_contact.rs`, whose contact slots and geometry they share). Per active contact, 29 features in the
//! contact frame (rows t₁, t₂, n): steps in contact t_c, signed distance d, relative point velocity v (2 minus 1),
//! arms r₁, r₂ (contact point − COM), r₁ × n, r₂ × n, rod axes z₁, z₂, angular velocities ω₁, ω₂; the plane side
//! of a plane–rod contact has zero arm, axis and spin. The network's 6 outputs are the force and torque on body 2 in
//! the contact frame (their opposite on body 1 when it moves), entering the step as external body wrenches
//! (`external.rs`, MuJoCo's `xfrc_applied`), so the step's `wrench_vjp` carries a loss back to them. Features are
//! data (teacher forcing, §3.8): no derivative is taken through them. No normalisation (§3.9).
use crate::data::{body_velocities, DynError};
use crate::external::WRENCH_DIM;
use crate::tensegrity_contact::{active, BodyState};
use crate::{DynData, DynModel};
use nalgebra::Matrix3;
use torsion_math::Vec3;

/// Inputs per contact (§3.9: 2 + 9 × 3).
pub const FEATURES: usize = 29;
/// Outputs per contact: force then torque on body 2, contact frame.
pub const OUTPUTS: usize = 6;

/// One active contact: where it acts and its network input.
#[derive(Clone, Debug)]
pub struct ContactSample {
    /// the linear model's contact slot (`LinearContactTerm::slot_geometry`)
    pub slot: usize,
    pub bodies: [usize; 2],
    /// whether each body moves (the plane and fixed rods do not)
    pub moving: [bool; 2],
    pub point: Vec3,
    /// the bodies' COMs (world)
    pub com: [Vec3; 2],
    /// world → contact frame (rows t₁, t₂, n)
    pub frame: Matrix3<f64>,
    pub x: [f64; FEATURES],
}

/// Steps each contact slot has been active (t_c): the contacts' memory across steps.
#[derive(Clone, Debug, Default)]
pub struct ContactClock {
    steps: Vec<u32>,
}

impl ContactClock {
    pub fn new(dm: &DynModel<f64>) -> Self {
        ContactClock { steps: vec![0; dm.tensegrity_contact.as_ref().map_or(0, |c| c.n_slots())] }
    }
    pub fn reset(&mut self) {
        self.steps.iter_mut().for_each(|s| *s = 0);
    }
}

/// Contact frame rows (t₁, t₂, n): t₁ = n × a / |n × a| with a the world axis least aligned with n, t₂ = n × t₁.
pub fn contact_frame(n: &Vec3) -> Matrix3<f64> {
    let a = n.iamin();
    let mut e = Vec3::zeros();
    e[a] = 1.0;
    let t1 = n.cross(&e).normalize();
    let t2 = n.cross(&t1);
    Matrix3::from_rows(&[t1.transpose(), t2.transpose(), n.transpose()])
}

/// The active contacts at (q, v) with their features, into `out` (cleared first); advances `clock` (an active
/// slot counts one more step, an inactive one restarts at 0). Activity is the linear model's test (§6 item 7) at
/// the state's velocity. Uses `d`'s kinematics scratch.
pub fn contact_samples_into(
    dm: &DynModel<f64>,
    q: &[f64],
    v: &[f64],
    dt: f64,
    d: &mut DynData<f64>,
    clock: &mut ContactClock,
    out: &mut Vec<ContactSample>,
) -> Result<(), DynError> {
    out.clear();
    let Some(lc) = &dm.tensegrity_contact else { return Ok(()) };
    dm.check_q(q)?;
    dm.check_v("v", v)?;
    if clock.steps.len() != lc.n_slots() {
        return Err(DynError::Shape { what: "ContactClock (slots)", got: clock.steps.len(), expected: lc.n_slots() });
    }
    crate::fk::forward_kinematics(dm, q, d);
    body_velocities(dm, d, v);
    for k in 0..lc.n_slots() {
        let c = lc.slot_geometry(d, k);
        if !active(d, &c.bodies, &c.point, &c.normal, c.depth, dt) {
            clock.steps[k] = 0;
            continue;
        }
        clock.steps[k] += 1;
        let r = contact_frame(&c.normal);
        let s = [BodyState::of(dm, d, c.bodies[0]), BodyState::of(dm, d, c.bodies[1])];
        let moving = [dm.root_pose[c.bodies[0]].is_none(), dm.root_pose[c.bodies[1]].is_none()];
        let vrel = s[1].point_vel(&c.point) - s[0].point_vel(&c.point);
        let mut x = [0.0; FEATURES];
        x[0] = clock.steps[k] as f64;
        x[1] = c.depth;
        let mut put = |i: usize, w: Vec3| x[i..i + 3].copy_from_slice((r * w).as_slice());
        put(2, vrel);
        for side in 0..2 {
            if c.rods[side].is_none() {
                continue; // the plane: zero arm, axis and spin
            }
            let rod = &lc.rods[c.rods[side].unwrap()];
            let arm = c.point - s[side].pos;
            put(5 + 3 * side, arm);
            put(11 + 3 * side, arm.cross(&c.normal));
            put(17 + 3 * side, s[side].rot * rod.axis);
            put(23 + 3 * side, s[side].w);
        }
        out.push(ContactSample {
            slot: k,
            bodies: c.bodies,
            moving,
            point: c.point,
            com: [s[0].pos, s[1].pos],
            frame: r,
            x,
        });
    }
    Ok(())
}

/// `wrench` (6 per body, `external.rs`) += the body wrenches of the output y: F = Rᵀ y_f on body 2 at the
/// contact point with the torque Rᵀ y_τ, their opposite on body 1 when it moves.
pub fn add_output_wrench(s: &ContactSample, y: &[f64], wrench: &mut [f64]) {
    let f = s.frame.transpose() * Vec3::new(y[0], y[1], y[2]);
    let tq = s.frame.transpose() * Vec3::new(y[3], y[4], y[5]);
    for side in 0..2 {
        if !s.moving[side] {
            continue;
        }
        let sign = if side == 1 { 1.0 } else { -1.0 };
        let (fb, nb) = (f * sign, ((s.point - s.com[side]).cross(&f) + tq) * sign);
        let w = &mut wrench[WRENCH_DIM * s.bodies[side]..WRENCH_DIM * (s.bodies[side] + 1)];
        for i in 0..3 {
            w[i] += fb[i];
            w[3 + i] += nb[i];
        }
    }
}

/// The adjoint of [`add_output_wrench`]: g_y = ∂⟨g_wrench, wrench⟩/∂y (written, not accumulated).
pub fn output_wrench_vjp(s: &ContactSample, g_wrench: &[f64], g_y: &mut [f64]) {
    let (mut gf, mut gt) = (Vec3::zeros(), Vec3::zeros());
    for side in 0..2 {
        if !s.moving[side] {
            continue;
        }
        let sign = if side == 1 { 1.0 } else { -1.0 };
        let w = &g_wrench[WRENCH_DIM * s.bodies[side]..WRENCH_DIM * (s.bodies[side] + 1)];
        let (gfb, gnb) = (Vec3::new(w[0], w[1], w[2]), Vec3::new(w[3], w[4], w[5]));
        // N = r × f + τ: ∂⟨ḡ_N, N⟩/∂f = ḡ_N × r
        gf += (gfb + gnb.cross(&(s.point - s.com[side]))) * sign;
        gt += gnb * sign;
    }
    g_y[..3].copy_from_slice((s.frame * gf).as_slice());
    g_y[3..6].copy_from_slice((s.frame * gt).as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_diff::{fd_jacobian, rel_err};
    use torsion_model::Model;

    /// Two free rods and a floor (tensegrity_contact.rs's test scene): rod a's lower cap in the floor, rod b
    /// crossing it.
    fn scene() -> Model {
        let xml = r#"<mujoco><option timestep="0.001"/><worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
            <body name="a" pos="0 0 0.481" quat="0.96592583 0 0.25881905 0"><freejoint/>
              <geom name="a" type="capsule" fromto="0 0 -0.5 0 0 0.5" size="0.05" mass="2"/></body>
            <body name="b" pos="0.20900 0.1 0.64900" quat="0.70710678 -0.70710678 0 0"><freejoint/>
              <geom name="b" type="capsule" fromto="0 0 -0.5 0 0 0.5" size="0.05" mass="3"/></body>
            </worldbody><custom><numeric name="torsion_linear_contact" data="0.4 0.3 0.6 0.05 0.005"/></custom>
            </mujoco>"#;
        torsion_model::io::mjcf::load_mjcf_str(xml, "rods.xml", None).unwrap()
    }

    /// The samples: the floor contact and the rod–rod contact are found with frames orthonormal and right-handed,
    /// n as the third row; t_c counts consecutive active steps and restarts after a gap; features hold the arms
    /// and their cross products consistently; the slots are the linear model's (same depths).
    #[test]
    fn samples_describe_the_linear_models_contacts() {
        let m = scene();
        let dm = crate::DynModel::<f64>::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let (q, mut v) = (m.qpos0.clone(), vec![0.0; m.nv()]);
        v[0] = 0.3;
        v[4] = -0.2;
        let (mut clock, mut out) = (ContactClock::new(&dm), Vec::new());
        contact_samples_into(&dm, &q, &v, 1e-3, &mut d, &mut clock, &mut out).unwrap();
        assert!(out.len() >= 2, "floor and rod–rod contacts: {}", out.len());
        let lc = dm.tensegrity_contact.as_ref().unwrap();
        for s in &out {
            let r = s.frame;
            assert!((r * r.transpose() - Matrix3::identity()).norm() < 1e-14 && (r.determinant() - 1.0).abs() < 1e-14);
            let g = lc.slot_geometry(&d, s.slot);
            assert!((r.row(2).transpose() - g.normal).norm() < 1e-15 && s.x[1] == g.depth && g.depth < 0.0);
            assert_eq!(s.x[0], 1.0);
            let arm2 = Vec3::new(s.x[8], s.x[9], s.x[10]);
            let n_c = Vec3::new(0.0, 0.0, 1.0); // n in its own frame
            let c2 = Vec3::new(s.x[14], s.x[15], s.x[16]);
            assert!((arm2.cross(&n_c) - c2).norm() < 1e-14);
        }
        contact_samples_into(&dm, &q, &v, 1e-3, &mut d, &mut clock, &mut out).unwrap();
        assert!(out.iter().all(|s| s.x[0] == 2.0));
        let mut far = q.clone();
        far[2] += 1.0; // rod a lifted out of every contact
        far[9] += 2.0;
        contact_samples_into(&dm, &far, &v, 1e-3, &mut d, &mut clock, &mut out).unwrap();
        assert!(out.is_empty());
        contact_samples_into(&dm, &q, &v, 1e-3, &mut d, &mut clock, &mut out).unwrap();
        assert!(out.iter().all(|s| s.x[0] == 1.0), "restarts after a gap");
    }

    /// The output → wrench map and its adjoint: ⟨g, W y⟩ = ⟨Wᵀ g, y⟩ by central differences, both sides moving
    /// (rod–rod) and one (floor); the moving pair's net force is zero.
    #[test]
    fn output_wrench_vjp_matches_central_differences() {
        let m = scene();
        let dm = crate::DynModel::<f64>::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let (q, v) = (m.qpos0.clone(), vec![0.0; m.nv()]);
        let (mut clock, mut out) = (ContactClock::new(&dm), Vec::new());
        contact_samples_into(&dm, &q, &v, 1e-3, &mut d, &mut clock, &mut out).unwrap();
        assert!(out.iter().any(|s| s.moving == [true, true]) && out.iter().any(|s| s.moving == [false, true]));
        let nw = WRENCH_DIM * dm.nb;
        let g: Vec<f64> = (0..nw).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.3).collect();
        for s in &out {
            let f = |y: &[f64]| {
                let mut w = vec![0.0; nw];
                add_output_wrench(s, y, &mut w);
                vec![w.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>()]
            };
            let fd = fd_jacobian(f, 6, 1e-6);
            let mut gy = [0.0; 6];
            output_wrench_vjp(s, &g, &mut gy);
            let fd_row: Vec<f64> = (0..6).map(|i| fd[(0, i)]).collect();
            let e = rel_err(&gy, &fd_row);
            assert!(e < 1e-8, "slot {}: {e:.1e}", s.slot);
            if s.moving == [true, true] {
                let mut w = vec![0.0; nw];
                add_output_wrench(s, &[1.0, -2.0, 0.5, 0.0, 0.0, 0.0], &mut w);
                let net: Vec3 = (0..dm.nb).map(|b| Vec3::new(w[6 * b], w[6 * b + 1], w[6 * b + 2])).sum();
                assert!(net.norm() < 1e-14);
            }
        }
    }
}
