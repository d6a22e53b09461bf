//! Physically consistent inertial parameters by the log-Cholesky map (Rucker & Wensing, "Smooth Parameterization
//! of Rigid-Body Inertia", RA-L 2022; issue 14 item 3). A body's 10 inertial parameters
//! π = (m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz) ([`crate::regressor`]'s order: mass, first moment
//! h = m c, rotational inertia about the body frame's origin) are physically consistent exactly when the 4 × 4
//! pseudo-inertia
//! ```text
//! J = [ Σ   h ]      Σ = ½ tr(I) 𝟙 − I   (the second moment of the mass distribution)
//!     [ hᵀ  m ]
//! ```
//! is positive definite (m > 0, I ≻ 0 and the triangle inequalities follow). Every θ ∈ ℝ¹⁰ maps to such a J:
//! J = U Uᵀ with U upper triangular,
//! ```text
//! U = e^α [ e^d1  s12   s13   t1 ]       θ = (α, d1, d2, d3, s12, s23, s13, t1, t2, t3)
//!         [ 0     e^d2  s23   t2 ]
//!         [ 0     0     e^d3  t3 ]
//!         [ 0     0     0     1  ]
//! ```
//! so m = e^{2α} (1 > 0 always), and I = tr(Σ) 𝟙 − Σ. The map is smooth and one-to-one onto the consistent set;
//! [`theta_from_params`] inverts it (for a start value from a URDF's inertia). Generic over the scalar, so its
//! Jacobian ∂π/∂θ comes from the same code with duals ([`params_jacobian`]); an optimiser works in θ and chains
//! ∂L/∂θ = (∂π/∂θ)ᵀ ∂L/∂π.
use crate::regressor::N_INERTIAL;
use nalgebra::{Matrix4, SMatrix};
use num_dual::DualSVec64;
use torsion_math::Scalar;

/// θ → π (see the module doc); any θ gives physically consistent parameters.
pub fn params_from_theta<T: Scalar>(th: &[T; N_INERTIAL]) -> [T; N_INERTIAL] {
    let [a, d1, d2, d3, s12, s23, s13, t1, t2, t3] = *th;
    let z = T::zero();
    let u =
        Matrix4::new(d1.exp(), s12, s13, t1, z, d2.exp(), s23, t2, z, z, d3.exp(), t3, z, z, z, T::one()) * (a.exp());
    let j = u * u.transpose();
    let tr = j[(0, 0)] + j[(1, 1)] + j[(2, 2)];
    // I = tr(Σ) 𝟙 − Σ
    let i = |r: usize, c: usize| if r == c { tr - j[(r, c)] } else { -j[(r, c)] };
    [j[(3, 3)], j[(0, 3)], j[(1, 3)], j[(2, 3)], i(0, 0), i(0, 1), i(1, 1), i(0, 2), i(1, 2), i(2, 2)]
}

/// The pseudo-inertia J of π (positive definite ⇔ physically consistent).
pub fn pseudo_inertia(p: &[f64; N_INERTIAL]) -> Matrix4<f64> {
    let [m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz] = *p;
    let half_tr = 0.5 * (ixx + iyy + izz);
    Matrix4::new(
        half_tr - ixx,
        -ixy,
        -ixz,
        hx, //
        -ixy,
        half_tr - iyy,
        -iyz,
        hy, //
        -ixz,
        -iyz,
        half_tr - izz,
        hz, //
        hx,
        hy,
        hz,
        m,
    )
}

/// π → θ, the inverse of [`params_from_theta`]; an error when π is not strictly physically consistent (J not
/// positive definite), naming the failing pivot.
pub fn theta_from_params(p: &[f64; N_INERTIAL]) -> Result<[f64; N_INERTIAL], String> {
    let j = pseudo_inertia(p);
    // J = U Uᵀ, U upper triangular: a Cholesky factorization from the last row/column up
    let mut u = Matrix4::<f64>::zeros();
    for c in (0..4).rev() {
        let mut d = j[(c, c)];
        for k in c + 1..4 {
            d -= u[(c, k)] * u[(c, k)];
        }
        if !(d > 0.0 && d.is_finite()) {
            return Err(format!(
                "inertial parameters {p:?} are not physically consistent: pseudo-inertia pivot {c} is {d:e} (must be > 0)"
            ));
        }
        u[(c, c)] = d.sqrt();
        for r in 0..c {
            let mut s = j[(r, c)];
            for k in c + 1..4 {
                s -= u[(r, k)] * u[(c, k)];
            }
            u[(r, c)] = s / u[(c, c)];
        }
    }
    let ea = u[(3, 3)];
    let n = |x: f64| x / ea;
    Ok([
        ea.ln(),
        n(u[(0, 0)]).ln(),
        n(u[(1, 1)]).ln(),
        n(u[(2, 2)]).ln(),
        n(u[(0, 1)]),
        n(u[(1, 2)]),
        n(u[(0, 2)]),
        n(u[(0, 3)]),
        n(u[(1, 3)]),
        n(u[(2, 3)]),
    ])
}

/// ∂π/∂θ at θ (10 × 10, row = π entry, column = θ entry), by one 10-wide dual pass of [`params_from_theta`].
pub fn params_jacobian(th: &[f64; N_INERTIAL]) -> SMatrix<f64, N_INERTIAL, N_INERTIAL> {
    type D = DualSVec64<N_INERTIAL>;
    let x: [D; N_INERTIAL] = std::array::from_fn(|k| {
        D::new(
            th[k],
            num_dual::Derivative::some(SMatrix::<f64, N_INERTIAL, 1>::from_fn(|r, _| if r == k { 1.0 } else { 0.0 })),
        )
    });
    let p = params_from_theta(&x);
    let mut jac = SMatrix::<f64, N_INERTIAL, N_INERTIAL>::zeros();
    for (r, pr) in p.iter().enumerate() {
        if let Some(e) = pr.eps.0 {
            for c in 0..N_INERTIAL {
                jac[(r, c)] = e[c];
            }
        }
    }
    jac
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Matrix3, Rotation3, Vector3};

    struct Rng(u64);
    impl Rng {
        fn u(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
        fn n(&mut self) -> f64 {
            2.0 * self.u() - 1.0
        }
    }

    /// A consistent body: mass, COM c, principal moments satisfying the triangle inequality, a rotation.
    fn random_body(r: &mut Rng) -> [f64; N_INERTIAL] {
        let m = 0.1 + 5.0 * r.u();
        let c = Vector3::new(r.n(), r.n(), r.n()) * 0.3;
        let (a, b) = (0.01 + r.u(), 0.01 + r.u());
        let (lo, hi) = ((a - b).abs() * 1.01 + 1e-3, (a + b) * 0.99); // strict triangle inequality
        let d = Vector3::new(a, b, lo + (hi - lo) * r.u());
        let rot = Rotation3::from_euler_angles(3.0 * r.n(), 3.0 * r.n(), 3.0 * r.n()).into_inner();
        let ic: Matrix3<f64> = rot * Matrix3::from_diagonal(&d) * rot.transpose();
        // about the origin: I = I_c + m (|c|² 𝟙 − c cᵀ)
        let io = ic + (Matrix3::identity() * c.norm_squared() - c * c.transpose()) * m;
        let h = c * m;
        [m, h.x, h.y, h.z, io[(0, 0)], io[(0, 1)], io[(1, 1)], io[(0, 2)], io[(1, 2)], io[(2, 2)]]
    }

    #[test]
    fn round_trip_on_consistent_bodies() {
        let mut r = Rng(0x5eed_1c0f);
        let mut worst: f64 = 0.0;
        for _ in 0..500 {
            let p = random_body(&mut r);
            let th = theta_from_params(&p).unwrap();
            let back = params_from_theta(&th);
            for k in 0..N_INERTIAL {
                worst = worst.max((back[k] - p[k]).abs() / p.iter().fold(1e-300f64, |a, x| a.max(x.abs())));
            }
        }
        eprintln!("log-Cholesky round trip, worst relative error {worst:.1e}");
        assert!(worst < 1e-12, "{worst}");
    }

    #[test]
    fn every_theta_is_physically_consistent() {
        let mut r = Rng(0xabcdef);
        for _ in 0..2000 {
            let th: [f64; N_INERTIAL] = std::array::from_fn(|_| 3.0 * r.n());
            let p = params_from_theta(&th);
            assert!(p[0] > 0.0, "mass {p:?}");
            let i = Matrix3::new(p[4], p[5], p[7], p[5], p[6], p[8], p[7], p[8], p[9]);
            // rotational inertia about the COM: positive definite with the triangle inequalities
            let c = Vector3::new(p[1], p[2], p[3]) / p[0];
            let ic = i - (Matrix3::identity() * c.norm_squared() - c * c.transpose()) * p[0];
            let e = ic.symmetric_eigen().eigenvalues;
            let scale = e.iter().fold(0.0f64, |a, x| a.max(x.abs()));
            assert!(e.iter().all(|&x| x > -1e-12 * scale), "I_c eigenvalues {e:?}");
            let (a, b, c3) = (e[0], e[1], e[2]);
            let tol = 1e-9 * scale;
            assert!(a <= b + c3 + tol && b <= a + c3 + tol && c3 <= a + b + tol, "triangle {e:?}");
            assert!(pseudo_inertia(&p).symmetric_eigen().eigenvalues.iter().all(|&x| x > -1e-12 * scale));
        }
    }

    #[test]
    fn inconsistent_parameters_are_refused_by_name() {
        let mut p = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 3.0]; // izz > ixx + iyy
        let e = theta_from_params(&p).unwrap_err();
        assert!(e.contains("not physically consistent"), "{e}");
        p = [-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]; // negative mass
        assert!(theta_from_params(&p).is_err());
    }

    /// ∂π/∂θ by duals against central finite differences.
    #[test]
    fn jacobian_matches_finite_differences() {
        let mut r = Rng(0x1234_5678);
        let mut worst: f64 = 0.0;
        for _ in 0..50 {
            let th: [f64; N_INERTIAL] = std::array::from_fn(|_| r.n());
            let jac = params_jacobian(&th);
            let h = 1e-6;
            for c in 0..N_INERTIAL {
                let (mut tp, mut tm) = (th, th);
                tp[c] += h;
                tm[c] -= h;
                let (pp, pm) = (params_from_theta(&tp), params_from_theta(&tm));
                for k in 0..N_INERTIAL {
                    let fd = (pp[k] - pm[k]) / (2.0 * h);
                    worst = worst.max((fd - jac[(k, c)]).abs() / (1.0 + jac[(k, c)].abs()));
                }
            }
        }
        eprintln!("log-Cholesky Jacobian vs central FD, worst {worst:.1e}");
        assert!(worst < 1e-6, "{worst}");
    }
}
