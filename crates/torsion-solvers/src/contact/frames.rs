//! Contact kinematics (spec 001 §3.1): per contact i the relative point-velocity Jacobian
//! J_i = J_A(p_i) − J_B(p_i) (3 × nv, world axes, tangent coordinates of `joints::integrate`), projected on the
//! contact frame: J_n(i) = n_iᵀ J_i, J_t(i) = [t1_i t2_i]ᵀ J_i. n points from B to A, so J_n v > 0 separates.
//! A fixed body (the ground) contributes nothing.
use nalgebra::DMatrix;
use torsion_collision::Contacts;
use torsion_dynamics::{DynData, DynModel};
use torsion_math::spatial::{ang, lin};
use torsion_math::{Scalar, Vec3};
use torsion_model::Model;

/// One contact as the stepper sees it: its geometry and material ([`ContactGeom`], read through as the frame's
/// own fields: `f.point`, `f.mu`) and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactFrame {
    pub geom: ContactGeom<f64>,
    /// the two shapes (indices into `Model::shapes`, those of body A then B) when the contact comes from
    /// collision detection, whose parameters `shape_friction[·]` / `shape_restitution[·]` give `mu` and
    /// `restitution` (the larger of the two values, [`pair_source`]); `None` for hand-built contacts
    pub shapes: Option<[usize; 2]>,
    /// persistent id (warm starts across steps)
    pub id: u64,
    /// radius of curvature of A's and of B's surface at the contact (a sphere's or capsule's radius), m; 0: a
    /// vertex, edge or flat face, whose contact point is a material point. Used by the Jacobians only: a curved
    /// surface's contact point rolls over it (`tangent.rs`)
    pub radius: [f64; 2],
}

impl ContactFrame {
    /// A hand-built contact (not from collision detection: no shapes; flat surfaces, radius 0).
    pub fn new(geom: ContactGeom<f64>, id: u64) -> Self {
        ContactFrame { geom, shapes: None, id, radius: [0.0; 2] }
    }
}

impl std::ops::Deref for ContactFrame {
    type Target = ContactGeom<f64>;
    fn deref(&self) -> &ContactGeom<f64> {
        &self.geom
    }
}

impl std::ops::DerefMut for ContactFrame {
    fn deref_mut(&mut self) -> &mut ContactGeom<f64> {
        &mut self.geom
    }
}

/// Which of a pair's two shapes supplies the pair value max(a, b) of a material coefficient (values `a`, `b` of
/// shapes `s[0]`, `s[1]`): the larger one; at a tie (a non-smooth point of the max) the shape with the lower
/// index, so its parameter alone carries the derivative (docs/gradients.md).
pub fn pair_source(s: [usize; 2], a: f64, b: f64) -> usize {
    if a > b || (a == b && s[0] <= s[1]) {
        s[0]
    } else {
        s[1]
    }
}

/// The joint moving each body (usize::MAX for roots), for [`contact_jacobians`].
pub fn body_joints<T: Scalar>(dm: &DynModel<T>, out: &mut Vec<usize>) {
    out.clear();
    out.resize(dm.nb, usize::MAX);
    for j in 0..dm.parent.len() {
        out[dm.child[j]] = j;
    }
}

/// A contact's geometry and material on any scalar (the tangent passes of the Jacobians move it with the bodies).
#[derive(Clone, Debug, PartialEq)]
pub struct ContactGeom<T: Scalar> {
    pub body_a: usize,
    pub body_b: usize,
    /// world contact point
    pub point: Vec3<T>,
    /// unit normal from B to A
    pub normal: Vec3<T>,
    /// (n, t1, t2) right-handed orthonormal
    pub tangents: [Vec3<T>; 2],
    /// signed distance (negative: penetration)
    pub distance: T,
    /// Coulomb friction coefficient of the pair
    pub mu: T,
    /// Newton restitution coefficient ε ∈ [0, 1] of the pair
    pub restitution: T,
}

/// Contact `c`'s Jacobian entries (spec 001 §3.1): `f(col, [n, t1, t2])` for each DoF of body A's chain (signed +)
/// then of body B's (signed −); a DoF on both chains is visited twice (the entries add). The one kinematic code
/// path of [`contact_jacobians`] (dense) and [`contact_rows`] (on the supports).
fn jacobian_entries<T: Scalar>(
    dm: &DynModel<T>,
    d: &DynData<T>,
    body_joint: &[usize],
    c: &ContactGeom<T>,
    mut f: impl FnMut(usize, [T; 3]),
) {
    for (body, sign) in [(c.body_a, T::one()), (c.body_b, -T::one())] {
        let mut b = body;
        while b < body_joint.len() && body_joint[b] != usize::MAX {
            let j = body_joint[b];
            let ch = dm.child[j];
            for k in 0..dm.joint[j].nv {
                // the joint's motion in world coordinates (about the world origin), then at the point
                let m = d.o_m[ch].act_motion(&dm.joint[j].s[k]);
                let vp = lin(&m) + ang(&m).cross(&c.point);
                let e = [sign * c.normal.dot(&vp), sign * c.tangents[0].dot(&vp), sign * c.tangents[1].dot(&vp)];
                f(dm.v_start[j] + k, e);
            }
            b = dm.parent[j];
        }
    }
}

/// J_n (nc × nv) and J_t (2nc × nv; rows t1, t2 of contact i at 2i, 2i + 1) from the world placements in
/// `d.o_m` (call `forward_kinematics` first). `body_joint` from [`body_joints`].
pub fn contact_jacobians<T: Scalar>(
    dm: &DynModel<T>,
    d: &DynData<T>,
    body_joint: &[usize],
    contacts: &[ContactGeom<T>],
    jn: &mut DMatrix<T>,
    jt: &mut DMatrix<T>,
) {
    jn.fill(T::zero());
    jt.fill(T::zero());
    for (i, c) in contacts.iter().enumerate() {
        jacobian_entries(dm, d, body_joint, c, |col, e| {
            jn[(i, col)] += e[0];
            jt[(2 * i, col)] += e[1];
            jt[(2 * i + 1, col)] += e[2];
        });
    }
}

/// The same Jacobians stored on each contact's support only (`delassus::ContactPattern`, filled for these
/// contacts): `rows[3 (start[c] + p) + m]` is row m (n, t1, t2) of contact c at its p-th support DoF — O(nc ×
/// depth) storage instead of O(nc × nv), the entries equal to the dense ones bit for bit (the same sums).
pub fn contact_rows<T: Scalar>(
    dm: &DynModel<T>,
    d: &DynData<T>,
    body_joint: &[usize],
    contacts: &[ContactGeom<T>],
    pat: &super::delassus::ContactPattern,
    rows: &mut Vec<T>,
) {
    rows.clear();
    rows.resize(3 * pat.dofs.len(), T::zero());
    for (i, c) in contacts.iter().enumerate() {
        let (sup, s0) = (pat.support(i), pat.start[i]);
        jacobian_entries(dm, d, body_joint, c, |col, e| {
            // every DoF of the chains is on the support (ascending)
            let p = s0 + sup.binary_search(&col).expect("a chain DoF is on the contact's support");
            for (m, x) in e.into_iter().enumerate() {
                rows[3 * p + m] += x;
            }
        });
    }
}

/// A persistent u64 key of a collision contact id (for warm starts).
pub fn contact_key(id: &torsion_collision::ContactId) -> u64 {
    let mut h = (id.geom_a as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= (id.geom_b as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(21);
    h ^ id.feature.wrapping_mul(0x1656_67B1_9E37_79F9).rotate_left(42)
}

/// A shape's radius of curvature at any contact point, when it is the same everywhere it can touch (spheres;
/// capsules, whose contacts are on their hemispherical caps or rolling sides); 0 for polyhedral shapes and
/// planes. Cylinders and ellipsoids (curved, but not with one radius) are treated as 0 (docs/gradients.md).
fn surface_radius(kind: &torsion_model::ShapeKind) -> f64 {
    match *kind {
        torsion_model::ShapeKind::Sphere { radius } | torsion_model::ShapeKind::Capsule { radius, .. } => radius,
        _ => 0.0,
    }
}

/// The contact frames of detected contacts, converted once (the frames every contact solver takes): the pair's μ
/// and ε are the larger of the two shapes' values (`pair_source`), the id a persistent key (`contact_key`), the
/// radii those of the shapes' surfaces (`surface_radius`). A polyhedral pair whose contacts are B's vertices on a
/// face of A (parry's feature ids; `face_on_a`) is turned round — A and B, shapes and radii swapped, n and t2
/// negated, t1 kept (the warm start's) — so the frame's B owns the face: its normal turns with B and the point is
/// a vertex of A, as the Jacobians take it (`anchor::Anchor`, docs/gradients.md).
pub fn frames_from_collision(model: &Model, contacts: &Contacts, frames: &mut Vec<ContactFrame>) {
    frames.clear();
    let all = &contacts.contacts;
    let mut start = 0;
    while start < all.len() {
        // one shape pair's contacts (its manifold: consecutive in the detection's output)
        let pair = (all[start].geom_a, all[start].geom_b);
        let run = &all[start..start + all[start..].iter().take_while(|c| (c.geom_a, c.geom_b) == pair).count()];
        start += run.len();
        let (sa, sb) = (&model.shapes[pair.0], &model.shapes[pair.1]);
        let radius = [surface_radius(&sa.kind), surface_radius(&sb.kind)];
        let flip = radius == [0.0; 2] && face_on_a(run);
        let shapes = [pair.0, pair.1];
        let mu = model.shapes[pair_source(shapes, sa.friction[0], sb.friction[0])].friction[0];
        let restitution = model.shapes[pair_source(shapes, sa.restitution, sb.restitution)].restitution;
        for c in run {
            let geom = ContactGeom {
                body_a: c.body_a,
                body_b: c.body_b,
                point: c.point,
                normal: c.normal,
                tangents: c.tangents,
                distance: c.distance,
                mu,
                restitution,
            };
            let mut f = ContactFrame { geom, shapes: Some(shapes), id: contact_key(&c.id), radius };
            if flip {
                std::mem::swap(&mut f.geom.body_a, &mut f.geom.body_b);
                f.normal = -f.normal;
                f.tangents[1] = -f.tangents[1];
                f.shapes = Some([pair.1, pair.0]);
                f.radius = [radius[1], radius[0]];
            }
            frames.push(f);
        }
    }
}

/// Merges each exact duplicate among one pair's frames (consecutive, as `frames_from_collision` writes them) into
/// the first: equal bit for bit in point, normal and distance (parry reports a corner of each box where two boxes'
/// corners coincide), the first kept with its id and tangents, the order kept; in place. Identical Jacobian rows add
/// unknowns (the ncp direct solve's cost grows as their cube) but no physics: the step depends on Jᵀλ alone (issue
/// 15). The ncp stepper's (`NcpSolver::detect`); the LCP stepper keeps its rows (its CCD stack test sinks deeper
/// with them merged).
pub fn merge_exact_duplicates(frames: &mut Vec<ContactFrame>) {
    let pair = |f: &ContactFrame| (f.shapes, f.body_a, f.body_b);
    let same = |a: &ContactFrame, b: &ContactFrame| (a.point, a.normal, a.distance) == (b.point, b.normal, b.distance);
    let (mut kept, mut run) = (0, 0);
    for i in 0..frames.len() {
        if kept == 0 || pair(&frames[i]) != pair(&frames[kept - 1]) {
            run = kept;
        }
        if !frames[run..kept].iter().any(|f| same(f, &frames[i])) {
            frames.swap(kept, i);
            kept += 1;
        }
    }
    frames.truncate(kept);
}

/// Whether a pair's contacts (one manifold) put the normal on a face of A: some are B's vertices on A's face and
/// none A's vertices on B's face. Its other contacts (edge crossings, the closest points parry adds) share that
/// normal. Both kinds (two faces of one size overlapping: the face is chosen by rounding, a non-smooth point) or
/// neither: left as detected.
fn face_on_a(run: &[torsion_collision::Contact]) -> bool {
    run.iter().any(|c| c.id.vertex_of_b_on_face_of_a()) && !run.iter().any(|c| c.id.vertex_of_a_on_face_of_b())
}

/// A collision failure as the named solver reports it.
pub fn collision_err(solver: &'static str) -> impl Fn(torsion_collision::CollisionError) -> crate::SolverError {
    move |e| crate::SolverError::Unsupported { solver, problem: e.to_string() }
}

/// Collision detection at configuration q for a contact solver, written into the caller's buffers: body poses
/// (`poses`) from the dynamics' forward kinematics (`fk.rs` into `d`, the one forward kinematics of a step; the
/// model's own `Model::forward_kinematics` serves the loaders and one-off queries), contacts whose tangents continue from the t1 of the same
/// contact in `warm` (the input state's warm start), then the contact frames. With contacts disabled (MJCF
/// `<flag contact="disable"/>`) both lists are emptied. Allocates nothing once the buffers have their sizes
/// (parry's own plane-box manifolds aside, see `tests/alloc.rs`).
#[allow(clippy::too_many_arguments)]
pub fn detect_into(
    solver: &'static str,
    model: &Model,
    world: &mut torsion_collision::CollisionWorld,
    dm: &DynModel<f64>,
    d: &mut torsion_dynamics::DynData<f64>,
    q: &[f64],
    warm: &torsion_model::ContactWarmStart,
    poses: &mut Vec<(Vec3, torsion_math::Quat)>,
    contacts: &mut Contacts,
    frames: &mut Vec<ContactFrame>,
) -> Result<(), crate::SolverError> {
    if !model.contact_enabled {
        contacts.contacts.clear();
        frames.clear();
        return Ok(());
    }
    dm.check_q(q).map_err(|e| crate::SolverError::BadInput { solver, problem: e.to_string() })?;
    torsion_dynamics::forward_kinematics(dm, q, d);
    poses.clear();
    poses.extend(d.o_m.iter().map(|x| (x.pos, torsion_math::Quat::from_mat(&x.rot))));
    let previous_t1 = |id: &torsion_collision::ContactId| warm.get(contact_key(id)).map(|w| w.t1.into());
    world.detect_with_tangents(poses, &previous_t1, contacts).map_err(collision_err(solver))?;
    frames_from_collision(model, contacts, frames);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use torsion_dynamics::forward_kinematics;
    use torsion_dynamics::joints::integrate;

    /// The poses collision detection takes from the dynamics' forward kinematics (`detect_into`) equal the model's
    /// own forward kinematics (the loaders'), on the floating tree, the Baxter arm and a loose MJCF body.
    #[test]
    fn dynamics_poses_equal_the_model_forward_kinematics() {
        let xml = r#"<mujoco><worldbody><body name="b" pos="0.3 0 1" euler="10 20 30"><freejoint/>
            <geom type="box" size="0.2 0.1 0.05" pos="0.03 -0.02 0.01"/></body></worldbody></mujoco>"#;
        let loose = torsion_model::io::mjcf::load_mjcf_str(xml, "loose.xml", None).unwrap();
        let baxter = torsion_model::io::robots::baxter_left_arm().expect("example-robot-data");
        let mut worst: f64 = 0.0;
        for (k, m) in [torsion_model::builder::floating_tree(), baxter, loose].into_iter().enumerate() {
            let dm = DynModel::<f64>::from_model(&m).unwrap();
            let mut d = DynData::new(&dm);
            let q = if m.nq() == 7 {
                m.neutral_q()
            } else {
                torsion_model::builder::example_configuration(&m, k as u64 + 1)
            };
            forward_kinematics(&dm, &q, &mut d);
            for (b, (x, r)) in m.forward_kinematics(&q).unwrap().iter().enumerate() {
                worst = worst.max((d.o_m[b].pos - x).amax()).max((d.o_m[b].rot - r.to_mat()).amax());
            }
        }
        assert!(worst < 1e-12, "dynamics vs model forward kinematics: {worst:e}");
    }

    /// Exact duplicates of a pair's contact (two boxes of one size stacked corner on corner: parry reports each
    /// corner from both boxes) become one frame each, the first kept; a contact off by one ulp stays.
    #[test]
    fn exact_duplicate_contacts_of_a_pair_are_merged() {
        let xml = r#"<mujoco><worldbody><geom type="plane" size="5 5 0.1"/>
            <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
            <body pos="0 0 0.301"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
            </worldbody></mujoco>"#;
        let m = torsion_model::io::mjcf::load_mjcf_str(xml, "stack.xml", None).unwrap();
        let opts = torsion_collision::CollisionOptions { margin: 0.01, complete_box_faces: true, ..Default::default() };
        let mut world = torsion_collision::CollisionWorld::new(&m, opts).unwrap();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let (mut poses, mut contacts, mut frames) = (vec![], Contacts::new(), vec![]);
        let warm = torsion_model::ContactWarmStart::default();
        let q = m.qpos0.clone();
        detect_into("test", &m, &mut world, &dm, &mut d, &q, &warm, &mut poses, &mut contacts, &mut frames).unwrap();
        assert_eq!(frames.len(), contacts.len());
        merge_exact_duplicates(&mut frames);
        let distinct = |fs: &[ContactFrame]| {
            (0..fs.len()).all(|i| (0..i).all(|j| (fs[i].point, fs[i].normal) != (fs[j].point, fs[j].normal)))
        };
        assert!(contacts.len() > frames.len(), "{} contacts, {} frames: no duplicate", contacts.len(), frames.len());
        assert!(distinct(&frames));
        // every detected point is a frame's
        assert!(contacts.iter().all(|c| frames.iter().any(|f| f.point == c.point)));
        // one ulp off: two frames
        let mut two = Contacts::new();
        let c = contacts.contacts[contacts.len() - 1];
        let mut e = c;
        e.point.x = f64::from_bits(c.point.x.to_bits() + 1);
        two.contacts.extend([c, e]);
        frames_from_collision(&m, &two, &mut frames);
        merge_exact_duplicates(&mut frames);
        assert_eq!(frames.len(), 2);
        two.contacts[1] = c;
        frames_from_collision(&m, &two, &mut frames);
        merge_exact_duplicates(&mut frames);
        assert_eq!(frames.len(), 1);
    }

    /// J_n, J_t against central differences of the material points' relative displacement (A's point minus B's,
    /// both moving with their bodies) projected on the frame, on the floating tree (free, ball, slide, hinges).
    #[test]
    fn contact_jacobians_match_finite_differences() {
        let m = torsion_model::builder::floating_tree();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let q = torsion_model::builder::example_configuration(&m, 4);
        forward_kinematics(&dm, &q, &mut d);
        let (a, b) = (3, 4);
        let p = Vec3::new(0.2, -0.1, 0.3);
        let n = Vec3::new(0.3, -0.2, 1.0).normalize();
        let t1 = n.cross(&Vec3::x()).normalize();
        let c = ContactGeom {
            body_a: a,
            body_b: b,
            point: p,
            normal: n,
            tangents: [t1, n.cross(&t1)],
            distance: 0.0,
            mu: 0.5,
            restitution: 0.0,
        };
        let mut bj = vec![];
        body_joints(&dm, &mut bj);
        let (mut jn, mut jt) = (DMatrix::zeros(1, dm.nv), DMatrix::zeros(2, dm.nv));
        contact_jacobians(&dm, &d, &bj, std::slice::from_ref(&c), &mut jn, &mut jt);
        let (la, lb) = (d.o_m[a].inverse().act_point(&p), d.o_m[b].inverse().act_point(&p));
        let rel = |qq: &[f64]| {
            let mut dd = DynData::new(&dm);
            forward_kinematics(&dm, qq, &mut dd);
            dd.o_m[a].act_point(&la) - dd.o_m[b].act_point(&lb)
        };
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for k in 0..dm.nv {
            let mut e = vec![0.0; dm.nv];
            e[k] = h;
            let dp = rel(&integrate(&dm, &q, &e));
            e[k] = -h;
            let dpm = rel(&integrate(&dm, &q, &e));
            let fd = (dp - dpm) / (2.0 * h);
            for (row, dir) in [(jn[(0, k)], n), (jt[(0, k)], c.tangents[0]), (jt[(1, k)], c.tangents[1])] {
                worst = worst.max((row - dir.dot(&fd)).abs());
            }
        }
        assert!(worst < 1e-8, "contact Jacobian vs FD: {worst:e}");
    }
}
