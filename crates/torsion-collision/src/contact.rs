//! The detected contact set of one step (design.md §1 `Contacts`), with spec 001 §3.1 conventions: the normal is
//! unit and points from body B to body A, so a positive relative normal velocity of A w.r.t. B separates; (n, t1,
//! t2) is a right-handed orthonormal frame; the distance is signed (negative = penetration).
use parry3d_f64::shape::PackedFeatureId;
use torsion_math::Vec3;

/// Persistent contact identity across steps: the shape pair and the manifold's feature pair (parry's packed
/// feature ids of the features of A and B that touch), so a box resting on a plane keeps one id per corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContactId {
    pub geom_a: usize,
    pub geom_b: usize,
    /// (feature id on A) << 32 | (feature id on B)
    pub feature: u64,
}

impl ContactId {
    /// parry's packed feature ids of A's and B's touching features (2 header bits: vertex, edge, face; 0 unknown)
    fn features(&self) -> [PackedFeatureId; 2] {
        [PackedFeatureId((self.feature >> 32) as u32), PackedFeatureId(self.feature as u32)]
    }

    /// A vertex of B on a face of A (the normal is A's face's, the point B's vertex).
    pub fn vertex_of_b_on_face_of_a(&self) -> bool {
        let [a, b] = self.features();
        a.is_face() && b.is_vertex()
    }

    /// A vertex of A on a face of B (the normal is B's face's, the point A's vertex).
    pub fn vertex_of_a_on_face_of_b(&self) -> bool {
        let [a, b] = self.features();
        a.is_vertex() && b.is_face()
    }
}

/// One contact point between shape `geom_a` (on `body_a`) and shape `geom_b` (on `body_b`). B is the plane if
/// there is one, else the shape on a fixed body, else the shape with the higher index, so ground contacts have
/// B = the ground and a normal pointing up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// model body index of A (fixed bodies allowed)
    pub body_a: usize,
    /// model body index of B (a fixed body for the ground / world geometry)
    pub body_b: usize,
    /// indices into `model.shapes`
    pub geom_a: usize,
    pub geom_b: usize,
    /// world position, m: midway between the two witness points
    pub point: Vec3,
    /// witness point on the surface of A, world, m
    pub point_a: Vec3,
    /// witness point on the surface of B, world, m
    pub point_b: Vec3,
    /// world, unit, pointing from B to A (spec 001 §3.1)
    pub normal: Vec3,
    /// signed distance along `normal`, m; negative = penetration
    pub distance: f64,
    /// t1, t2 with (n, t1, t2) right-handed orthonormal, continuous over time for a persistent contact
    pub tangents: [Vec3; 2],
    /// persistent across steps
    pub id: ContactId,
}

/// The contact set of one step. On entry to [`crate::CollisionWorld::detect`] it holds the previous step's
/// contacts, used for tangent continuity; on return, this step's.
#[derive(Clone, Debug, Default)]
pub struct Contacts {
    pub contacts: Vec<Contact>,
}

impl Contacts {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.contacts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.contacts.is_empty()
    }
    /// Forget every contact (the next `detect` then chooses fresh tangents).
    pub fn clear(&mut self) {
        self.contacts.clear()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Contact> {
        self.contacts.iter()
    }
    /// Contacts whose shape pair is (`geom_a`, `geom_b`) in either order.
    pub fn between(&self, geom_a: usize, geom_b: usize) -> impl Iterator<Item = &Contact> {
        self.contacts
            .iter()
            .filter(move |c| (c.geom_a, c.geom_b) == (geom_a, geom_b) || (c.geom_a, c.geom_b) == (geom_b, geom_a))
    }
    /// The contact with id `id`, if present.
    pub fn find(&self, id: &ContactId) -> Option<&Contact> {
        self.contacts.iter().find(|c| c.id == *id)
    }
}
