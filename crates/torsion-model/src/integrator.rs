//! The time integrator of the generalized-coordinate steppers (issue 20 item 3; docs/decisions.md
//! "Integrators"): MJCF `<option integrator>`, the CLI's `--integrator` and `FeatherstoneOptions::integrator`.
use std::fmt;

/// Which integrator a generalized-coordinate step uses (MuJoCo's names in [`Integrator::from_name`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Integrator {
    /// MuJoCo's `Euler`: semi-implicit Euler, joint damping implicit (the default, as before)
    #[default]
    SemiImplicitEuler,
    /// MuJoCo's `RK4`: classical 4-stage Runge–Kutta on the manifold (quaternions by the exponential map)
    Rk4,
    /// MuJoCo's `implicitfast`: Euler, implicit in velocity for the damping and the actuators' velocity
    /// derivatives (no Coriolis terms)
    ImplicitFast,
}

impl Integrator {
    /// MJCF / CLI name → integrator, and whether it was mapped to another (MuJoCo's `implicit` runs as
    /// `implicitfast`: the Coriolis terms of its velocity derivative are not modelled). Case as MuJoCo's.
    pub fn from_name(name: &str) -> Option<(Integrator, bool)> {
        match name {
            "Euler" => Some((Integrator::SemiImplicitEuler, false)),
            "RK4" => Some((Integrator::Rk4, false)),
            "implicitfast" => Some((Integrator::ImplicitFast, false)),
            "implicit" => Some((Integrator::ImplicitFast, true)),
            _ => None,
        }
    }

    /// MuJoCo's name of the integrator.
    pub fn name(self) -> &'static str {
        match self {
            Integrator::SemiImplicitEuler => "Euler",
            Integrator::Rk4 => "RK4",
            Integrator::ImplicitFast => "implicitfast",
        }
    }
}

impl fmt::Display for Integrator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
