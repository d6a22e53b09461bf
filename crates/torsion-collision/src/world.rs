//! [`CollisionWorld`]: parry shapes built once from a [`Model`], pair filtering, and `detect` (broad phase →
//! narrow phase → contact frames) producing [`Contacts`] with spec 001 §3.1 conventions.
use crate::broad_phase::{Aabb, BroadPhase, SweepAndPrune};
use crate::contact::{ContactId, Contacts};
use crate::error::CollisionError;
use crate::mesh::{MeshHulls, MeshPolicy, PackageSearch};
use crate::narrow_phase::{emit_pair, polytope_pair, PairScratch};
use crate::shapes::{build_shape, pose_to_parry, BuiltShape};
use parry3d_f64::math::{Pose, Vector};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use torsion_math::{Quat, Vec3};
use torsion_model::{JointType, Model};

/// Options of [`CollisionWorld`].
#[derive(Clone, Debug)]
pub struct CollisionOptions {
    /// report contacts with signed distance ≤ `margin`, m (touching counts: a box resting exactly on a plane has
    /// its 4 corners at distance 0); default 0
    pub margin: f64,
    /// parry's manifold prediction distance, m: manifold points are generated up to max(`margin`, `prediction`);
    /// default 0
    pub prediction: f64,
    /// MuJoCo's `filterparent`: skip pairs of a body and its parent (through massless "virtual" bodies of
    /// multi-joint MJCF bodies) unless the parent is fixed (MuJoCo exempts the world); default true
    pub filter_parent: bool,
    /// extra body pairs never to collide (MJCF `<contact><exclude>` style), any order; added to the model's own
    /// `Model::contact_exclude` (for URDF models: every joint's parent–child pair)
    pub exclude_bodies: Vec<(usize, usize)>,
    /// what to do with meshes that cannot be loaded; default [`MeshPolicy::Error`]
    pub mesh_policy: MeshPolicy,
    /// where `package://` mesh names are looked up first; then `ROS_PACKAGE_PATH`, the folders above the model
    /// file and example-robot-data's install folder (see [`crate::mesh::resolve_mesh_path`])
    pub package_dirs: Vec<PathBuf>,
    /// default [`BroadPhase::SweepAndPrune`]
    pub broad_phase: BroadPhase,
    /// complete two boxes' face–face manifolds with each face vertex on the other face (parry keeps only those
    /// strictly inside: on coplanar box sides a corner comes and goes with round-off; `narrow_phase`); default
    /// false (the ncp stepper turns it on; the lcp stepper's box-on-box LCPs with the complete side contact of two
    /// resting cubes have no valid answer by Dantzig or PGS, docs/decisions.md row 2)
    pub complete_box_faces: bool,
}

impl Default for CollisionOptions {
    fn default() -> Self {
        Self {
            margin: 0.0,
            prediction: 0.0,
            filter_parent: true,
            exclude_bodies: Vec::new(),
            mesh_policy: MeshPolicy::Error,
            package_dirs: Vec::new(),
            broad_phase: BroadPhase::SweepAndPrune,
            complete_box_faces: false,
        }
    }
}

/// Per-shape data kept by the world.
struct Entry {
    built: BuiltShape,
    body: usize,
    contype: u32,
    conaffinity: u32,
}

/// The previous step's first tangent of a contact, looked up by its id (contact tangents continue across steps).
type TangentSeed<'a> = &'a dyn Fn(&ContactId) -> Option<Vec3>;

/// Collision geometry of one model and the scratch of `detect` (no allocation after the first calls).
pub struct CollisionWorld {
    opts: CollisionOptions,
    body_count: usize,
    body_name: Vec<String>,
    body_fixed: Vec<bool>,
    /// nearest non-virtual parent body of each body (None: a root)
    filter_parent: Vec<Option<usize>>,
    /// body pairs welded by a fixed joint (never collide), (min, max)
    welded: HashSet<(usize, usize)>,
    excluded: HashSet<(usize, usize)>,
    /// per model shape; None: never collides (contype = conaffinity = 0, or a skipped mesh)
    entries: Vec<Option<Entry>>,
    warnings: Vec<String>,
    // scratch
    world_pose: Vec<Pose>,
    bounded: Vec<usize>,
    planes: Vec<usize>,
    aabbs: Vec<Aabb>,
    sap: SweepAndPrune,
    pairs: Vec<(usize, usize)>,
    prev_t1: HashMap<ContactId, Vec3, IdHasher>,
    pair_scratch: PairScratch,
}

/// A fast hasher for [`ContactId`] lookups (multiply–rotate over the three words; SipHash costs more than the
/// narrow phase of a box on a plane). Not DoS-resistant, which ids computed from our own geometry do not need.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHash(u64);

impl std::hash::Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64)
    }
}

pub(crate) type IdHasher = std::hash::BuildHasherDefault<IdHash>;

fn is_virtual(m: &Model, b: usize) -> bool {
    !m.body_fixed[b] && m.body_mass[b] == 0.0 && m.body_inertia[b].norm() == 0.0
}

impl CollisionWorld {
    /// Build the parry shape of every collidable model shape. Errors name the shape (and file for meshes).
    pub fn new(model: &Model, opts: CollisionOptions) -> Result<Self, CollisionError> {
        if !(opts.margin.is_finite() && opts.prediction.is_finite() && opts.prediction >= 0.0) {
            return Err(CollisionError::BadOption(format!(
                "margin ({}) must be finite and prediction ({}) finite and ≥ 0",
                opts.margin, opts.prediction
            )));
        }
        let nb = model.body_count();
        for (what, list) in
            [("exclude_bodies", &opts.exclude_bodies), ("Model::contact_exclude", &model.contact_exclude)]
        {
            if let Some((a, b)) = list.iter().find(|&&(a, b)| a >= nb || b >= nb) {
                return Err(CollisionError::BadOption(format!("{what} has ({a}, {b}) but the model has {nb} bodies")));
            }
        }
        let mut meshes = MeshHulls::new(PackageSearch::new(&opts.package_dirs, model.source_file.as_deref()));
        let mut warnings = Vec::new();
        let mut entries = Vec::with_capacity(model.shapes.len());
        for (i, s) in model.shapes.iter().enumerate() {
            if s.body >= nb {
                return Err(CollisionError::BadBody { shape: s.name.clone(), index: i, body: s.body, body_count: nb });
            }
            if s.contype == 0 && s.conaffinity == 0 {
                entries.push(None); // visual only: not even built (its mesh need not exist)
                continue;
            }
            let built = build_shape(s, i, opts.mesh_policy, &mut meshes, &mut warnings)?;
            entries.push(built.map(|built| Entry {
                built,
                body: s.body,
                contype: s.contype,
                conaffinity: s.conaffinity,
            }));
        }
        let mut parent = vec![None; nb];
        let mut welded = HashSet::new();
        for j in 0..model.joint_count() {
            let (p, c) = (model.joint_parent[j], model.joint_child[j]);
            if p < nb && c < nb {
                parent[c] = Some(p);
                if model.joint_type[j] == JointType::Fixed {
                    welded.insert((p.min(c), p.max(c)));
                }
            }
        }
        let filter_parent = (0..nb)
            .map(|b| {
                let mut p = parent[b];
                let mut guard = 0;
                while let Some(q) = p {
                    if !is_virtual(model, q) || guard > nb {
                        break;
                    }
                    p = parent[q];
                    guard += 1;
                }
                p
            })
            .collect();
        let mut w = Self {
            body_count: nb,
            body_name: model.body_name.clone(),
            body_fixed: model.body_fixed.clone(),
            filter_parent,
            welded,
            excluded: (opts.exclude_bodies.iter().chain(&model.contact_exclude))
                .map(|&(a, b)| (a.min(b), a.max(b)))
                .collect(),
            opts,
            entries,
            warnings,
            world_pose: vec![Pose::IDENTITY; model.shapes.len()],
            bounded: Vec::new(),
            planes: Vec::new(),
            aabbs: Vec::new(),
            sap: SweepAndPrune::default(),
            pairs: Vec::new(),
            prev_t1: HashMap::default(),
            pair_scratch: PairScratch::default(),
        };
        // plane–plane pairs have no parry manifold: say so once
        let planes: Vec<usize> =
            (0..w.entries.len()).filter(|&i| w.entries[i].as_ref().is_some_and(|e| e.built.is_plane)).collect();
        for (k, &i) in planes.iter().enumerate() {
            for &j in &planes[k + 1..] {
                if w.allowed(i, j) {
                    let n = |s: usize| model.shapes[s].name.clone();
                    w.warnings.push(format!(
                        "planes '{}' and '{}' never collide (plane–plane unsupported)",
                        n(i),
                        n(j)
                    ));
                }
            }
        }
        Ok(w)
    }

    pub fn options(&self) -> &CollisionOptions {
        &self.opts
    }

    /// Warnings collected while building (skipped meshes, unsupported pairs).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether model shape `i` takes part in collision (false: visual-only or a skipped mesh).
    pub fn is_collidable(&self, i: usize) -> bool {
        self.entries.get(i).is_some_and(|e| e.is_some())
    }

    /// The filtering rules for shapes `i` and `j` (both collidable): different bodies, not two fixed bodies, not
    /// welded, not excluded (options and `Model::contact_exclude`), MuJoCo's bitmask rule
    /// (ct_i & ca_j) || (ct_j & ca_i), and the parent filter.
    pub fn allowed(&self, i: usize, j: usize) -> bool {
        let (Some(Some(a)), Some(Some(b))) = (self.entries.get(i), self.entries.get(j)) else { return false };
        let (ba, bb) = (a.body, b.body);
        let key = (ba.min(bb), ba.max(bb));
        if ba == bb || (self.body_fixed[ba] && self.body_fixed[bb]) || self.welded.contains(&key) {
            return false;
        }
        if (a.contype & b.conaffinity) == 0 && (b.contype & a.conaffinity) == 0 {
            return false;
        }
        if self.excluded.contains(&key) {
            return false;
        }
        if self.opts.filter_parent {
            let child_of = |c: usize, p: usize| self.filter_parent[c] == Some(p) && !self.body_fixed[p];
            if child_of(ba, bb) || child_of(bb, ba) {
                return false;
            }
        }
        true
    }

    /// Contacts with signed distance ≤ `margin` for body world poses `poses` (COM frame position and orientation,
    /// one per model body, fixed bodies included). On entry `out` holds the previous step's contacts (their t1
    /// seed this step's tangents, see [`crate::frames`]); pass an empty [`Contacts`] for none.
    pub fn detect(&mut self, poses: &[(Vec3, Quat)], out: &mut Contacts) -> Result<(), CollisionError> {
        self.detect_seeded(poses, None, out)
    }

    /// As [`CollisionWorld::detect`], with each contact's previous t1 given by `previous_t1` (e.g. from a
    /// state's contact warm start) instead of `out`'s contacts: the frames then depend on the inputs only.
    pub fn detect_with_tangents(
        &mut self,
        poses: &[(Vec3, Quat)],
        previous_t1: &dyn Fn(&ContactId) -> Option<Vec3>,
        out: &mut Contacts,
    ) -> Result<(), CollisionError> {
        self.detect_seeded(poses, Some(previous_t1), out)
    }

    fn detect_seeded(
        &mut self,
        poses: &[(Vec3, Quat)],
        seed: Option<TangentSeed<'_>>,
        out: &mut Contacts,
    ) -> Result<(), CollisionError> {
        if poses.len() != self.body_count {
            return Err(CollisionError::PoseCount { got: poses.len(), expected: self.body_count });
        }
        for (b, (x, q)) in poses.iter().enumerate() {
            if !(x.iter().all(|v| v.is_finite()) && q.to_array().iter().all(|v| v.is_finite()) && q.norm() > 1e-9) {
                return Err(CollisionError::NonFinitePose { body: b, name: self.body_name[b].clone() });
            }
        }
        self.prev_t1.clear();
        if seed.is_none() {
            self.prev_t1.extend(out.contacts.iter().map(|c| (c.id, c.tangents[0])));
        }
        out.contacts.clear();
        let reach = self.opts.margin.max(self.opts.prediction);
        // world poses and AABBs
        self.bounded.clear();
        self.planes.clear();
        self.aabbs.clear();
        for (i, e) in self.entries.iter().enumerate() {
            let Some(e) = e else { continue };
            let (x, q) = &poses[e.body];
            let p = pose_to_parry(x, &q.normalize()) * e.built.local;
            self.world_pose[i] = p;
            if e.built.is_plane {
                self.planes.push(i);
            } else {
                let bb = e.built.shape.compute_aabb(&p);
                let l = reach.max(0.0);
                self.aabbs.push(Aabb {
                    min: [bb.mins.x - l, bb.mins.y - l, bb.mins.z - l],
                    max: [bb.maxs.x + l, bb.maxs.y + l, bb.maxs.z + l],
                });
                self.bounded.push(i);
            }
        }
        // broad phase
        self.pairs.clear();
        let mut sap = std::mem::take(&mut self.sap);
        let mut pairs = std::mem::take(&mut self.pairs);
        {
            let bounded = &self.bounded;
            sap.pairs(self.opts.broad_phase, &self.aabbs, |a, b| self.allowed(bounded[a], bounded[b]), &mut pairs);
            for p in pairs.iter_mut() {
                *p = (bounded[p.0], bounded[p.1]);
            }
            for &pl in &self.planes {
                let pose = &self.world_pose[pl];
                let n = pose.rotation * Vector::Z;
                let o = pose.translation;
                for (k, &s) in bounded.iter().enumerate() {
                    if !self.allowed(pl, s) {
                        continue;
                    }
                    // lowest corner of the (loosened) AABB along n, relative to the plane
                    let bb = &self.aabbs[k];
                    let c = Vector::new(
                        if n.x >= 0.0 { bb.min[0] } else { bb.max[0] },
                        if n.y >= 0.0 { bb.min[1] } else { bb.max[1] },
                        if n.z >= 0.0 { bb.min[2] } else { bb.max[2] },
                    );
                    if n.dot(c - o) <= reach {
                        pairs.push((pl.min(s), pl.max(s)));
                    }
                }
            }
        }
        pairs.sort_unstable();
        // narrow phase
        let prev = &self.prev_t1;
        let from_map = |id: &ContactId| prev.get(id).copied();
        let prev_t1 = seed.unwrap_or(&from_map);
        self.pair_scratch.complete_box_faces = self.opts.complete_box_faces;
        for &(i, j) in &pairs {
            let (Some(ei), Some(ej)) = (&self.entries[i], &self.entries[j]) else { continue };
            // B: the plane, else the shape on a fixed body, else the higher index (spec 001 §3.1: n points B → A)
            let rank = |e: &Entry| 2 * e.built.is_plane as u8 + self.body_fixed[e.body] as u8;
            let (a, b) = if rank(ej) >= rank(ei) { (i, j) } else { (j, i) };
            let (ea, eb) = if a == i { (ei, ej) } else { (ej, ei) };
            emit_pair(
                (a, ea.body, &*ea.built.shape.0, &self.world_pose[a]),
                (b, eb.body, &*eb.built.shape.0, &self.world_pose[b]),
                self.opts.margin,
                reach,
                prev_t1,
                &mut self.pair_scratch,
                out,
            );
        }
        self.sap = sap;
        self.pairs = pairs;
        Ok(())
    }

    /// Number of shape pairs the last `detect` sent to the narrow phase.
    pub fn last_pair_count(&self) -> usize {
        self.pairs.len()
    }
}

/// Queries for continuous collision detection (spec 004 §3.5, issue 17 item 3): the stepper moves the bodies
/// along its own path (the position update), and finds the first root of each pair's signed distance along it.
impl CollisionWorld {
    /// Every shape pair that may collide (both collidable, [`CollisionWorld::allowed`]), (i, j) with i < j, into
    /// `out` (no broad phase: the caller prunes by distance and motion bounds).
    pub fn shape_pairs_into(&self, out: &mut Vec<(usize, usize)>) {
        out.clear();
        for i in 0..self.entries.len() {
            for j in i + 1..self.entries.len() {
                if self.allowed(i, j) {
                    out.push((i, j));
                }
            }
        }
    }

    /// The body carrying collidable shape `i`.
    pub fn shape_body(&self, i: usize) -> Option<usize> {
        self.entries.get(i)?.as_ref().map(|e| e.body)
    }

    /// The largest distance of a point of collidable shape `i` from its body's origin (COM frame), m: |c| + r of
    /// its bounding sphere in the body frame; ∞ for a plane.
    pub fn shape_reach(&self, i: usize) -> f64 {
        match self.entries.get(i) {
            Some(Some(e)) if !e.built.is_plane => {
                let s = e.built.shape.compute_bounding_sphere(&e.built.local);
                s.center.length() + s.radius
            }
            _ => f64::INFINITY,
        }
    }

    /// Whether collidable shapes `i` and `j` are both polytopes (mesh hulls or boxes; not two boxes, whose
    /// manifold is exact): their distance comes from GJK / EPA, whose direction is noise as φ → 0, so the CCD
    /// stops such a pair a small gap short of contact (spec 004 §3.7, docs/decisions.md D5).
    pub fn polytope_pair(&self, i: usize, j: usize) -> bool {
        let (Some(Some(a)), Some(Some(b))) = (self.entries.get(i), self.entries.get(j)) else { return false };
        polytope_pair(&*a.built.shape.0, &*b.built.shape.0)
    }

    /// The signed distance of collidable shapes `i` and `j` (negative: penetration depth) at body world poses
    /// `poses` (as [`CollisionWorld::detect`]): parry's closed forms for sphere–sphere, sphere / box / convex –
    /// plane and box–box, GJK / EPA for other convex pairs. An unsupported pair (plane–plane) is an error.
    pub fn signed_distance(&self, i: usize, j: usize, poses: &[(Vec3, Quat)]) -> Result<f64, CollisionError> {
        let (Some(Some(a)), Some(Some(b))) = (self.entries.get(i), self.entries.get(j)) else {
            return Err(CollisionError::BadOption(format!("signed_distance: shape {i} or {j} is not collidable")));
        };
        if poses.len() != self.body_count {
            return Err(CollisionError::PoseCount { got: poses.len(), expected: self.body_count });
        }
        let pose = |e: &Entry| {
            let (x, q) = &poses[e.body];
            pose_to_parry(x, &q.normalize()) * e.built.local
        };
        let (pa, pb) = (pose(a), pose(b));
        let unsupported =
            || CollisionError::BadOption(format!("signed_distance: shapes {i} and {j}: pair unsupported by parry"));
        match parry3d_f64::query::contact(&pa, &*a.built.shape.0, &pb, &*b.built.shape.0, 0.0) {
            Ok(Some(c)) => Ok(c.dist.min(0.0)),
            Ok(None) => parry3d_f64::query::distance(&pa, &*a.built.shape.0, &pb, &*b.built.shape.0)
                .map(|d| d.distance)
                .map_err(|_| unsupported()),
            Err(_) => Err(unsupported()),
        }
    }
}

#[cfg(test)]
mod toi_tests {
    use super::*;

    /// Signed distances of the CCD queries against closed forms: sphere–plane, sphere–sphere, box–plane (its lowest
    /// corner, tilted), separated and penetrating; reach and pairs.
    #[test]
    fn signed_distances_match_closed_forms() {
        let m = torsion_model::io::mjcf::load_mjcf_str(
            r#"<mujoco><worldbody><geom type="plane" size="5 5 0.1"/>
            <body><freejoint/><geom type="sphere" size="0.1"/></body>
            <body><freejoint/><geom type="sphere" size="0.2"/></body>
            <body><freejoint/><geom type="box" size="0.1 0.2 0.3"/></body>
            </worldbody></mujoco>"#,
            "s.xml",
            None,
        )
        .unwrap();
        let w = CollisionWorld::new(&m, CollisionOptions::default()).unwrap();
        let mut pairs = vec![];
        w.shape_pairs_into(&mut pairs);
        assert_eq!(pairs.len(), 6);
        assert!(w.shape_reach(0).is_infinite() && (w.shape_reach(1) - 0.1).abs() < 1e-12);
        let q = Quat::from_axis_angle(&Vec3::new(1.0, 0.0, 0.0), 0.3);
        for z in [0.35, 0.05, -0.02] {
            let poses = vec![
                (Vec3::zeros(), Quat::identity()),
                (Vec3::new(0.0, 0.0, z), Quat::identity()),
                (Vec3::new(0.0, 0.2 + 0.1 + z, z), Quat::identity()),
                (Vec3::new(2.0, 0.0, z + 0.2), q),
            ];
            let d = |i, j| w.signed_distance(i, j, &poses).unwrap();
            assert!((d(0, 1) - (z - 0.1)).abs() < 1e-12, "sphere–plane {}", d(0, 1));
            let centre = 0.3 + z;
            assert!((d(1, 2) - (centre - 0.3)).abs() < 1e-12, "sphere–sphere {}", d(1, 2));
            // the box's lowest corner: z + 0.2 − (0.2 sin θ + 0.3 cos θ) (half sizes y 0.2, z 0.3 turned by θ about x)
            let low = z + 0.2 - (0.2 * 0.3f64.sin() + 0.3 * 0.3f64.cos());
            assert!((d(0, 3) - low).abs() < 1e-12, "box–plane {} vs {low}", d(0, 3));
        }
    }
}
