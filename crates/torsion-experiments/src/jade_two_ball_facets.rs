//! jade-two-ball's facet model (spec 004 §4.2, issue 17 item 6): the two-ball billiard of mesh balls in continuous
//! time, without the stepper, for the resolution study and to place gradient checks inside the loss's pieces.
//! Two copies of one centrally symmetric convex hull A (same orientation; the collision world's hull of the mesh)
//! touch when blue's centre relative to yellow's, p(t) = BLUE + (VX, v_y) t, enters B − A = A ⊕ (−A) = 2A. The
//! elastic equal-mass impact on x / y slides sends yellow along u = −n̂, n̂ the x–y part of the normal of the face of
//! 2A hit (generalized impulse along J = (n_xy, −n_xy): yellow gets n̂ (n̂·v_blue)), at blue's speed along u. So the
//! loss over v_y is piecewise smooth, one piece per face hit (yellow's direction fixed on a piece, its travel
//! smooth), with jumps where the face changes; a piece's best error is at least |p* × u|. Mirror faces meeting
//! on an edge in z = 0 (same n̂) form one piece.
use crate::jade_two_ball::{BLUE, DT, LR, MAX_STEP, R, STEPS, TARGET, VX, VY0};
use std::collections::HashSet;

const T: f64 = STEPS as f64 * DT;

/// A UV sphere of radius `r` as OBJ text: poles on z, `rings` latitude bands, `segments` vertices per latitude at
/// azimuths 2πj/segments (a vertex on +x; the common modelling-tool sphere, e.g. Blender's 32 × 16). Centrally
/// symmetric for even `segments`; odd `rings` put a band of quads with horizontal normals on the equator (an even
/// count puts a ring of vertices there: two balls then touch edge to edge in z = 0, where the normal is not unique).
pub fn uv_sphere_obj(r: f64, segments: usize, rings: usize) -> String {
    let mut s = format!("v 0 0 {r}\n");
    for i in 1..rings {
        let th = std::f64::consts::PI * i as f64 / rings as f64;
        for j in 0..segments {
            let ph = 2.0 * std::f64::consts::PI * j as f64 / segments as f64;
            s += &format!("v {} {} {}\n", r * th.sin() * ph.cos(), r * th.sin() * ph.sin(), r * th.cos());
        }
    }
    s += &format!("v 0 0 {}\n", -r);
    let (v, last) = (|i: usize, j: usize| 2 + (i - 1) * segments + j % segments, 2 + (rings - 1) * segments);
    for j in 0..segments {
        s += &format!("f 1 {} {}\n", v(1, j), v(1, j + 1));
        for i in 1..rings - 1 {
            s += &format!("f {} {} {} {}\n", v(i, j), v(i + 1, j), v(i + 1, j + 1), v(i, j + 1));
        }
        s += &format!("f {last} {} {}\n", v(rings - 1, j + 1), v(rings - 1, j));
    }
    s
}

/// A mesh ball's facets in the plane of motion: the faces of 2A that cross z = 0 (outward unit normal n, offset h:
/// n·x ≤ h inside; the others do not bound the cross-section the relative path lies in).
pub struct FacetModel {
    planes: Vec<([f64; 3], f64)>,
    /// faces of the hull
    pub faces: usize,
}

/// One piece of the loss over v_y: an interval hitting faces of one in-plane normal.
#[derive(Clone, Debug)]
pub struct Piece {
    pub lo: f64,
    pub hi: f64,
    /// yellow's direction of travel (degrees from +x; p* is at 33.69°)
    pub direction_deg: f64,
    /// the least position error on the piece, and where
    pub best_error: f64,
    pub best_vy: f64,
}

impl FacetModel {
    /// From a mesh's OBJ text, through the collision world's hull (`torsion_collision::mesh::hull_of`).
    pub fn from_obj(obj: &str) -> Result<Self, String> {
        let pts = torsion_collision::mesh::vertices_from_bytes(obj.as_bytes(), "obj")?;
        let hull = torsion_collision::mesh::hull_of(&pts)?;
        let poly = hull.as_convex_polyhedron().ok_or("the mesh's hull is not a convex polyhedron")?;
        let (p, adj) = (poly.points(), poly.vertices_adj_to_face());
        // B − A = 2A needs −A = A
        let key = |x: f64, y: f64, z: f64| [x, y, z].map(|c| (c * 1e9).round() as i64);
        let set: HashSet<_> = p.iter().map(|a| key(a.x, a.y, a.z)).collect();
        if let Some(a) = p.iter().find(|a| !set.contains(&key(-a.x, -a.y, -a.z))) {
            return Err(format!("the hull is not centrally symmetric: no vertex opposite ({}, {}, {})", a.x, a.y, a.z));
        }
        let mut planes = vec![];
        for f in poly.faces() {
            let ids =
                &adj[f.first_vertex_or_edge as usize..(f.first_vertex_or_edge + f.num_vertices_or_edges) as usize];
            let z = ids.iter().map(|&i| p[i as usize].z);
            let (zmin, zmax) = z.clone().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), z| (a.min(z), b.max(z)));
            if zmin <= 1e-12 && zmax >= -1e-12 {
                let (n, v) = (f.normal, p[ids[0] as usize]);
                planes.push(([n.x, n.y, n.z], 2.0 * (n.x * v.x + n.y * v.y + n.z * v.z)));
            }
        }
        Ok(FacetModel { planes, faces: poly.faces().len() })
    }

    /// The time blue touches yellow and the face of 2A hit (None: no contact before T).
    pub fn hit(&self, vy: f64) -> Option<(f64, usize)> {
        let (mut t_in, mut t_out, mut face) = (f64::NEG_INFINITY, f64::INFINITY, usize::MAX);
        for (k, (n, h)) in self.planes.iter().enumerate() {
            let (nd, gap) = (n[0] * VX + n[1] * vy, h - (n[0] * BLUE[0] + n[1] * BLUE[1]));
            if nd == 0.0 {
                if gap < 0.0 {
                    return None;
                }
            } else if nd < 0.0 {
                if gap / nd > t_in {
                    (t_in, face) = (gap / nd, k);
                }
            } else {
                t_out = t_out.min(gap / nd);
            }
        }
        (face != usize::MAX && t_in <= t_out && (0.0..=T).contains(&t_in)).then_some((t_in, face))
    }

    /// Yellow's direction u (unit, in the plane) after hitting face `k`.
    fn direction(&self, k: usize) -> [f64; 2] {
        let n = self.planes[k].0;
        let l = n[0].hypot(n[1]);
        [-n[0] / l, -n[1] / l]
    }

    /// Yellow's position at T.
    pub fn final_position(&self, vy: f64) -> [f64; 2] {
        let Some((t, k)) = self.hit(vy) else { return [0.0, 0.0] };
        let u = self.direction(k);
        let d = (T - t) * (VX * u[0] + vy * u[1]);
        [d * u[0], d * u[1]]
    }

    pub fn error(&self, vy: f64) -> f64 {
        let p = self.final_position(vy);
        (p[0] - TARGET[0]).hypot(p[1] - TARGET[1])
    }

    /// Which piece v_y is on: yellow's direction and the face's in-plane offset (mirror faces share both).
    fn piece_key(&self, vy: f64) -> Option<[i64; 3]> {
        self.hit(vy).map(|(_, k)| {
            let u = self.direction(k);
            let (n, h) = self.planes[k];
            [u[0], u[1], h / n[0].hypot(n[1])].map(|c| (c * 1e9).round() as i64)
        })
    }

    /// The pieces on [lo, hi] found on a grid of `samples` points (a piece narrower than the spacing can be
    /// missed), their ends bisected to 1e-12, the best error on each by golden section.
    pub fn pieces(&self, lo: f64, hi: f64, samples: usize) -> Vec<Piece> {
        let vy = |i: usize| lo + (hi - lo) * i as f64 / (samples - 1) as f64;
        let (mut out, mut start) = (vec![], lo);
        let close = |a: f64, b: f64, out: &mut Vec<Piece>| {
            let Some((_, k)) = self.hit(0.5 * (a + b)) else { return };
            let u = self.direction(k);
            let (best_vy, best_error) = golden(|v| self.error(v), a, b);
            let direction_deg = u[1].atan2(u[0]).to_degrees();
            out.push(Piece { lo: a, hi: b, direction_deg, best_error, best_vy });
        };
        for i in 1..samples {
            let (ka, kb) = (self.piece_key(vy(i - 1)), self.piece_key(vy(i)));
            if ka != kb {
                let (mut a, mut b) = (vy(i - 1), vy(i));
                while b - a > 1e-12 {
                    let m = 0.5 * (a + b);
                    if self.piece_key(m) == ka {
                        a = m;
                    } else {
                        b = m;
                    }
                }
                close(start, a, &mut out);
                start = b;
            }
        }
        close(start, hi, &mut out);
        out
    }

    /// Gradient descent of the experiment (D13: step −LR ∂L/∂v_y clipped to ±MAX_STEP, from VY0) on this model,
    /// ∂L/∂v_y by central differences (h 1e-9, inside a piece but at the jumps): (final v_y, its error).
    pub fn descent(&self, iterations: usize) -> (f64, f64) {
        let loss = |v: f64| self.error(v).powi(2);
        let mut vy = VY0;
        for _ in 0..iterations {
            let g = (loss(vy + 1e-9) - loss(vy - 1e-9)) / 2e-9;
            vy -= (LR * g).clamp(-MAX_STEP, MAX_STEP);
        }
        (vy, self.error(vy))
    }
}

/// Golden-section minimum of `f` on [a, b], the ends included: (argmin, min).
fn golden(f: impl Fn(f64) -> f64, a: f64, b: f64) -> (f64, f64) {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x0, mut x1) = (a, b);
    for _ in 0..80 {
        let (c, d) = (x1 - g * (x1 - x0), x0 + g * (x1 - x0));
        if f(c) < f(d) {
            x1 = d;
        } else {
            x0 = c;
        }
    }
    [a, b, 0.5 * (x0 + x1)]
        .into_iter()
        .map(|v| (v, f(v)))
        .fold((a, f64::INFINITY), |m, p| if p.1 < m.1 { p } else { m })
}

/// The mesh balls of the resolution study: (name, OBJ text of radius R).
pub fn study_meshes(quick: bool) -> Vec<(String, String)> {
    let mut m: Vec<(String, String)> = vec![];
    let subs: &[usize] = if quick { &[1, 2] } else { &[1, 2, 3, 4, 5] };
    for &s in subs {
        m.push((format!("icosphere_{s}"), torsion_collision::mesh::icosphere_obj(R, s)));
    }
    let segs: &[usize] = if quick { &[16, 48] } else { &[8, 12, 16, 20, 24, 32, 48, 64, 96] };
    for &s in segs {
        m.push((format!("uv_{s}x{}", s / 2), uv_sphere_obj(R, s, s / 2)));
        m.push((format!("uv_{s}x{}", s / 2 + 1), uv_sphere_obj(R, s, s / 2 + 1)));
    }
    m
}

/// The v_y range of the study (exact spheres hit for |v_y| < 1.5; the optimum is near −0.7).
pub const STUDY_VY: (f64, f64) = (-1.5, 0.0);
/// grid points locating the pieces (spacing 7.5e-5 in v_y)
pub const STUDY_SAMPLES: usize = 20001;

#[cfg(test)]
mod tests {
    use super::*;

    /// The facet model's loss on v_y: piece by piece its best error is at least the distance from p* to the
    /// piece's line of travel, and the best over the pieces of icosphere 1 / 2 is the offline figure recorded
    /// before (EXPERIMENTS.md: 0.0462 / 0.0684).
    #[test]
    fn facet_model_pieces_and_icosphere_best_errors() {
        for (sub, best) in [(1, 0.0462), (2, 0.0684)] {
            let m = FacetModel::from_obj(&torsion_collision::mesh::icosphere_obj(R, sub)).unwrap();
            let pieces = m.pieces(STUDY_VY.0, STUDY_VY.1, 4001);
            for p in &pieces {
                let u = [p.direction_deg.to_radians().cos(), p.direction_deg.to_radians().sin()];
                assert!(p.best_error >= (TARGET[0] * u[1] - TARGET[1] * u[0]).abs() - 1e-12, "{p:?}");
            }
            let b = pieces.iter().map(|p| p.best_error).fold(f64::INFINITY, f64::min);
            eprintln!("icosphere {sub}: {} pieces, best error {b:.5}", pieces.len());
            assert!((b - best).abs() < 1e-4, "icosphere {sub}: best {b}");
        }
    }

    /// A UV sphere's hull: every vertex on the sphere, centrally symmetric, (segments · (rings − 1) + 2) vertices.
    #[test]
    fn uv_sphere_is_a_symmetric_inscribed_polytope() {
        let obj = uv_sphere_obj(R, 16, 8);
        let pts = torsion_collision::mesh::vertices_from_bytes(obj.as_bytes(), "obj").unwrap();
        assert_eq!(pts.len(), 16 * 7 + 2);
        assert!(pts.iter().all(|p| ((p.x * p.x + p.y * p.y + p.z * p.z).sqrt() - R).abs() < 1e-12));
        let m = FacetModel::from_obj(&obj).unwrap();
        // the equator is a vertex ring: the faces crossing z = 0 are the 2 · 16 quads touching it
        assert_eq!(m.planes.len(), 32, "{} faces", m.faces);
        assert!(FacetModel::from_obj(&uv_sphere_obj(R, 15, 8)).is_err(), "odd segments: not symmetric");
    }
}
