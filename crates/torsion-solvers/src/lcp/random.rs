//! Random frictional LCPs from random multi-contact scenes (spec 004 §4.5 (i)): 1–3 free rigid bodies
//! (6 generalized velocities each, random mass, box inertia and orientation), K contacts between a body and the
//! ground or two bodies, at random points (or, for one body in three scenes, on the corners and edges of its
//! bottom face, as a box on a table: a rank-deficient A), μ ∈ [0.1, 1], random pre-contact velocities with an
//! approaching bias. A = J M⁻¹ Jᵀ, b = J v*; rows (n, t1, t2) per contact as `BoxedLcp::from_prelude`.
use super::problem::{BoxedLcp, Row};
use nalgebra::{DMatrix, DVector, Matrix3, Rotation3, Vector3};
use torsion_math::rng::SplitMix64;

/// The scenes' generator: `torsion_math::rng::SplitMix64` from a seed mixed with the golden ratio.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64(seed ^ 0x9E37_79B9_7F4A_7C15))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// uniform in [lo, hi)
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.0.u()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    fn vec3(&mut self, r: f64) -> Vector3<f64> {
        Vector3::new(self.uniform(-r, r), self.uniform(-r, r), self.uniform(-r, r))
    }
    fn unit(&mut self) -> Vector3<f64> {
        loop {
            let v = self.vec3(1.0);
            let n = v.norm();
            if n > 0.1 && n <= 1.0 {
                return v / n;
            }
        }
    }
}

/// t1 from the world axis least aligned with n, t2 = n × t1 (D3).
pub fn tangent_basis(n: &Vector3<f64>) -> [Vector3<f64>; 2] {
    let k = (0..3).min_by(|&a, &b| n[a].abs().total_cmp(&n[b].abs())).unwrap_or(0);
    let t1 = n.cross(&Vector3::ith(k, 1.0)).normalize();
    [t1, n.cross(&t1)]
}

struct Body {
    com: Vector3<f64>,
    rot: Matrix3<f64>,
    half: Vector3<f64>,
    minv: f64,
    iinv: Matrix3<f64>,
}

/// A random frictional LCP with `contacts` contacts (seeded).
pub fn random_contact_lcp(seed: u64, contacts: usize) -> BoxedLcp {
    let mut r = Rng::new(seed);
    let nb = 1 + r.below(3);
    let bodies: Vec<Body> = (0..nb)
        .map(|k| {
            let half = Vector3::new(r.uniform(0.05, 0.3), r.uniform(0.05, 0.3), r.uniform(0.05, 0.3));
            let m = r.uniform(0.5, 2.0);
            let ib = Matrix3::from_diagonal(&Vector3::new(
                m * (half.y * half.y + half.z * half.z) / 3.0,
                m * (half.x * half.x + half.z * half.z) / 3.0,
                m * (half.x * half.x + half.y * half.y) / 3.0,
            ));
            // mostly upright, tilted up to ~0.3 rad
            let rot = Rotation3::from_scaled_axis(r.vec3(0.3) + Vector3::z() * r.uniform(-3.0, 3.0)).into_inner();
            let iw = rot * ib * rot.transpose();
            Body {
                com: Vector3::new(k as f64, 0.0, half.z),
                rot,
                half,
                minv: 1.0 / m,
                iinv: iw.try_inverse().unwrap_or_else(Matrix3::identity),
            }
        })
        .collect();
    let nv = 6 * nb;
    let mut minv = DMatrix::zeros(nv, nv);
    for (k, b) in bodies.iter().enumerate() {
        for d in 0..3 {
            minv[(6 * k + d, 6 * k + d)] = b.minv;
        }
        minv.view_mut((6 * k + 3, 6 * k + 3), (3, 3)).copy_from(&b.iinv);
    }
    let table = r.below(3) == 0;
    let m = 3 * contacts;
    let mut jac = DMatrix::zeros(m, nv);
    let mut rows = Vec::with_capacity(m);
    let corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0), (0.0, -1.0), (1.0, 0.0)];
    for c in 0..contacts {
        // (body A, optional body B) and the point and normal
        let (a, bb, p, n) = if table {
            let b = &bodies[0];
            let (x, y) = corners[c % corners.len()];
            let p = b.com + b.rot * Vector3::new(x * b.half.x, y * b.half.y, -b.half.z);
            (0, None, p, Vector3::z())
        } else if nb > 1 && r.below(3) == 0 {
            let a = r.below(nb);
            let o = (a + 1 + r.below(nb - 1)) % nb;
            let p = (bodies[a].com + bodies[o].com) / 2.0 + r.vec3(0.1);
            (a, Some(o), p, r.unit())
        } else {
            let a = r.below(nb);
            let b = &bodies[a];
            let p = b.com + b.rot * b.half.component_mul(&r.vec3(1.0));
            let n = (Vector3::z() + r.vec3(0.5)).normalize();
            (a, None, p, n)
        };
        let [t1, t2] = tangent_basis(&n);
        for (s, dir) in [n, t1, t2].iter().enumerate() {
            for (body, sign) in [(Some(a), 1.0), (bb, -1.0)] {
                let Some(k) = body else { continue };
                let rr = p - bodies[k].com;
                let ang = rr.cross(dir);
                for d in 0..3 {
                    jac[(3 * c + s, 6 * k + d)] += sign * dir[d];
                    jac[(3 * c + s, 6 * k + 3 + d)] += sign * ang[d];
                }
            }
        }
        let mu = r.uniform(0.1, 1.0);
        rows.push(Row::Normal);
        rows.push(Row::Friction { normal: 3 * c, mu });
        rows.push(Row::Friction { normal: 3 * c, mu });
    }
    let mut v = DVector::zeros(nv);
    for k in 0..nb {
        let lin = r.vec3(2.0) - Vector3::z() * r.uniform(0.0, 1.0);
        let ang = r.vec3(3.0);
        for d in 0..3 {
            v[6 * k + d] = lin[d];
            v[6 * k + 3 + d] = ang[d];
        }
    }
    let a = &jac * &minv * jac.transpose();
    let b = &jac * v;
    BoxedLcp::new((&a + a.transpose()) * 0.5, b, rows).expect("a well-formed random LCP")
}
