//! Joint spring element (spec 000 §3.11, Eq. 31 with the θ-dependent spring length fix; `literal` keeps the
//! printed form). Generic over the scalar; its gradient (7 inputs: θ and the 6 constants) comes from dual
//! numbers of the same function, so there is no second copy of the formula.
use num_dual::Dual64;
use torsion_math::Scalar;

/// τ_s = sign · sin γ · (l1 l2 / x) · k (x − x_rest), γ = π − α1 − α2 − θ,
/// x = sqrt(l1² + l2² + 2 l1 l2 cos γ)  (literal: cos(π − α1 − α2)).
#[inline]
pub fn spring_torque<T: Scalar>(theta: T, p: &[T; 6], sign: f64, literal: bool) -> T {
    let [k, a1, a2, l1, l2, xr] = *p;
    let pi = T::c(std::f64::consts::PI);
    let gamma = pi - a1 - a2 - theta;
    let gx = if literal { pi - a1 - a2 } else { gamma };
    let x = (l1 * l1 + l2 * l2 + T::c(2.0) * l1 * l2 * gx.cos()).sqrt();
    T::c(sign) * gamma.sin() * (l1 * l2 / x) * k * (x - xr)
}

/// Gradient of [`spring_torque`] w.r.t. (θ, k, α1, α2, l1, l2, x_rest), by forward-mode duals.
pub fn spring_torque_grad(theta: f64, p: &[f64; 6], sign: f64, literal: bool) -> [f64; 7] {
    let mut g = [0.0; 7];
    for (i, gi) in g.iter_mut().enumerate() {
        let th = if i == 0 { Dual64::from_re(theta).derivative() } else { Dual64::from_re(theta) };
        let mut pd = [Dual64::from_re(0.0); 6];
        for f in 0..6 {
            pd[f] = if i == f + 1 { Dual64::from_re(p[f]).derivative() } else { Dual64::from_re(p[f]) };
        }
        *gi = spring_torque(th, &pd, sign, literal).eps;
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn spring_grad_matches_finite_differences() {
        let p = [4500.0, 0.3, 0.2, 0.25, 0.10, 0.2];
        let th = -0.4;
        for literal in [false, true] {
            let g = spring_torque_grad(th, &p, 1.0, literal);
            let h = 1e-6;
            let mut x = [th, p[0], p[1], p[2], p[3], p[4], p[5]];
            for i in 0..7 {
                let f = |x: &[f64; 7]| spring_torque(x[0], &[x[1], x[2], x[3], x[4], x[5], x[6]], 1.0, literal);
                x[i] += h;
                let a = f(&x);
                x[i] -= 2.0 * h;
                let b = f(&x);
                x[i] += h;
                let fd = (a - b) / (2.0 * h);
                assert!((fd - g[i]).abs() <= 1e-6 * (1.0 + fd.abs()), "{i}: {fd} vs {}", g[i]);
            }
        }
    }
}
