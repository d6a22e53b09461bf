//! Cables and their motors as model elements (spec 003 §3.3–3.4), with MuJoCo's semantics for a two-site
//! `<spatial>` tendon and a `<general>` actuator on it:
//! - tendon length L = |x_B − x_A|, velocity L̇ = û·(ẋ_B − ẋ_A), û = (x_B − x_A)/L;
//! - tendon force f = −k (L − l_hi) if L > l_hi, −k (L − l_lo) if L < l_lo, else 0 (MuJoCo `springlength`
//!   "lo hi", one value = both), minus c L̇ (damping acts also inside the dead band), plus the actuator force
//!   gain · w (+ bias₀ + bias₁ L + bias₂ L̇ for `biastype="affine"`), w = act for `dyntype="filter"`, ctrl for
//!   `dyntype="none"`; the generalized force is J_Lᵀ f (J_L = ûᵀ (J_B − J_A));
//! - filter state (MuJoCo `act`): ẇ = (clamp(ctrl) − w)/τ, τ = dynprm[0], integrated by explicit Euler after
//!   the force used w (`actearly="false"`): w' = w + h (ctrl − w)/τ. Spec 003's a = h/τ, b = gain/k.
use torsion_math::Vec3;

/// A straight spring-damper cable between two sites (MJCF `<spatial>` with two `<site>` children).
#[derive(Clone, Debug, PartialEq)]
pub struct Cable {
    pub name: String,
    /// the bodies of the two end sites (A, B)
    pub body: [usize; 2],
    /// end points in their body's COM frame, m
    pub site: [Vec3; 2],
    /// stiffness k, N/m (parameter `tendon_stiffness[name]`)
    pub stiffness: f64,
    /// damping c, N·s/m (parameter `tendon_damping[name]`)
    pub damping: f64,
    /// rest length dead band [lo, hi], m: no spring force for lo ≤ L ≤ hi (lo = hi: a plain spring)
    pub springlength: (f64, f64),
}

/// What an actuator drives (MuJoCo's transmission). Its "length" ℓ and velocity ℓ̇ are the cable's L, L̇ or
/// the joint's q, q̇; the force acts along the cable or as the joint's generalized force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transmission {
    /// index into `Model::cables`
    Cable(usize),
    /// index of a hinge or slide joint (MuJoCo `joint=`; ball and free joints are refused by the loader)
    Joint(usize),
}

/// An actuator (MJCF `<motor>` / `<position>` / `<velocity>` / `<general>`) on a cable or a 1-DoF joint.
/// MuJoCo's gear g is folded into the fields (ℓ_mj = g ℓ, force on the transmission = g · F_mj):
/// force = clamp(gain · w + bias₀ + bias₁ ℓ + bias₂ ℓ̇, forcerange), with gain = g gainprm₀,
/// bias = (g biasprm₀, g² biasprm₁, g² biasprm₂), forcerange = g × MuJoCo's forcerange (sorted).
#[derive(Clone, Debug, PartialEq)]
pub struct CableActuator {
    pub name: String,
    /// the cable or joint it drives
    pub transmission: Transmission,
    /// gain (MuJoCo gainprm[0] × gear), N (or N·m) per unit of w (parameter `actuator_gain[name]`)
    pub gain: f64,
    /// affine bias (bias₀, bias₁ per unit of ℓ, bias₂ per unit of ℓ̇), gear folded in; zero for `biastype="none"`
    pub bias: [f64; 3],
    /// force clamp on the transmission (MuJoCo `forcelimited` + `forcerange`, × gear)
    pub forcerange: Option<(f64, f64)>,
    /// filter time constant τ, s (`dyntype="filter"`, dynprm[0]; parameter `actuator_timeconst[name]`);
    /// None: no activation state, the force uses the control directly (`dyntype="none"`)
    pub timeconst: Option<f64>,
    /// control clamp (MuJoCo `ctrllimited` + `ctrlrange`)
    pub ctrlrange: Option<(f64, f64)>,
}

/// Spec 003 §3.6's linear contact model for rods (capsule / cylinder geoms of loose bodies) against planes and
/// each other: reaction j = (−β d/Δt² − (1+e) v·n/Δt)/K(n) (clamped ≥ 0), sliding friction
/// −(1−γ) v_t/(Δt K(t)) capped at μ j, torsional/rolling damping (ε − 1) I (ω·z) z/Δt once per rod in contact
/// (kernel: torsion-dynamics `tensegrity_contact.rs`). Global parameters, one set for all pairs; named
/// `contact_beta`, `contact_e`, `contact_gamma`, `contact_mu`, `contact_eps` in the parameter table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearContact {
    /// Baumgarte bias β ∈ [0, 1]: the fraction of the depth corrected per step
    pub beta: f64,
    /// restitution e ∈ [−1, 1]: v_n' = −e v_n (one step, other forces ignored)
    pub e: f64,
    /// sliding damping γ ∈ [0, 1]: v_t' = γ v_t while below the Coulomb cap
    pub gamma: f64,
    /// Coulomb coefficient μ ≥ 0 (spec range [0, 1])
    pub mu: f64,
    /// spin damping ε ∈ [0, 1] (spec range [0, 0.01]): ω'·z = ε ω·z about the rod axis
    pub eps: f64,
}

/// The parameter names of [`LinearContact`]'s fields, in table order (β, e, γ, μ, ε).
pub const LINEAR_CONTACT_NAMES: [&str; 5] = ["contact_beta", "contact_e", "contact_gamma", "contact_mu", "contact_eps"];

/// The MJCF `<custom><numeric name=…>` that turns the linear contact model on: data = "β e γ μ ε".
pub const LINEAR_CONTACT_CUSTOM: &str = "torsion_linear_contact";

impl Default for LinearContact {
    /// The middle of spec 003 §3.7's ranges (e = 0: inelastic), docs/decisions.md.
    fn default() -> Self {
        LinearContact { beta: 0.5, e: 0.0, gamma: 0.5, mu: 0.5, eps: 0.005 }
    }
}

impl LinearContact {
    pub fn get(&self, k: usize) -> f64 {
        [self.beta, self.e, self.gamma, self.mu, self.eps][k]
    }
    pub fn set(&mut self, k: usize, v: f64) {
        *[&mut self.beta, &mut self.e, &mut self.gamma, &mut self.mu, &mut self.eps][k] = v;
    }
    pub fn from_array(a: [f64; 5]) -> Self {
        LinearContact { beta: a[0], e: a[1], gamma: a[2], mu: a[3], eps: a[4] }
    }
    /// Range checks; errors name the parameter.
    pub fn validate(&self) -> Result<(), crate::ModelError> {
        let ranges = [(0.0, 1.0), (-1.0, 1.0), (0.0, 1.0), (0.0, f64::INFINITY), (0.0, 1.0)];
        for (k, (lo, hi)) in ranges.into_iter().enumerate() {
            let v = self.get(k);
            if !(v >= lo && v <= hi && v.is_finite()) {
                return Err(crate::ModelError::Invalid(format!(
                    "{} must be in [{lo}, {hi}] and finite, got {v}",
                    LINEAR_CONTACT_NAMES[k]
                )));
            }
        }
        Ok(())
    }
}

/// Length of the cable's end-to-end vector below which its direction is taken as zero (no NaN at L = 0).
pub const MIN_CABLE_LENGTH: f64 = 1e-12;

impl CableActuator {
    /// The cable it drives, if any.
    pub fn cable(&self) -> Option<usize> {
        match self.transmission {
            Transmission::Cable(c) => Some(c),
            Transmission::Joint(_) => None,
        }
    }
}

impl crate::Model {
    /// Controls of the actuators (MuJoCo nu), one per `cable_actuators` entry (cable and joint transmissions).
    pub fn nu(&self) -> usize {
        self.cable_actuators.len()
    }
    /// Activation states (MuJoCo na): one per filter actuator, in actuator order.
    pub fn na(&self) -> usize {
        self.cable_actuators.iter().filter(|a| a.timeconst.is_some()).count()
    }
    /// The activation index of each actuator (None for stateless ones).
    pub fn act_index(&self) -> Vec<Option<usize>> {
        let mut k = 0;
        self.cable_actuators
            .iter()
            .map(|a| {
                a.timeconst.map(|_| {
                    k += 1;
                    k - 1
                })
            })
            .collect()
    }
    pub fn cable_index(&self, name: &str) -> Option<usize> {
        self.cables.iter().position(|c| c.name == name)
    }

    /// Cable / actuator invariants (called by `validate`).
    pub(crate) fn validate_cables(&self) -> Result<(), crate::ModelError> {
        let bad = |m: String| Err(crate::ModelError::Invalid(m));
        for c in &self.cables {
            if c.body.iter().any(|&b| b >= self.body_count()) {
                return bad(format!("cable '{}': body index out of range", c.name));
            }
            for (what, x) in [("tendon_stiffness", c.stiffness), ("tendon_damping", c.damping)] {
                if !(x >= 0.0 && x.is_finite()) {
                    return bad(format!("cable '{}': {what} must be ≥ 0 and finite, got {x}", c.name));
                }
            }
            let (lo, hi) = c.springlength;
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return bad(format!("cable '{}': springlength lower {lo} must be ≤ upper {hi}", c.name));
            }
        }
        if let Some(lc) = &self.tensegrity_contact {
            lc.validate()?;
        }
        for a in &self.cable_actuators {
            match a.transmission {
                Transmission::Cable(c) if c >= self.cables.len() => {
                    return bad(format!("actuator '{}': cable index out of range", a.name));
                }
                Transmission::Joint(j) if j >= self.joint_count() => {
                    return bad(format!("actuator '{}': joint index out of range", a.name));
                }
                Transmission::Joint(j) if self.joint_type[j].dof() != 1 => {
                    return bad(format!(
                        "actuator '{}': joint '{}' is {:?}: only hinge and slide joints take an actuator",
                        a.name, self.joint_name[j], self.joint_type[j]
                    ));
                }
                _ => {}
            }
            if !a.gain.is_finite() || a.bias.iter().any(|b| !b.is_finite()) {
                return bad(format!("actuator '{}': actuator_gain and bias must be finite", a.name));
            }
            if let Some(t) = a.timeconst {
                if !(t > 0.0 && t.is_finite()) {
                    return bad(format!("actuator '{}': actuator_timeconst must be > 0, got {t}", a.name));
                }
            }
            if let Some((lo, hi)) = a.ctrlrange {
                if lo >= hi || lo.is_nan() || hi.is_nan() {
                    return bad(format!("actuator '{}': ctrlrange lower {lo} must be below upper {hi}", a.name));
                }
            }
            if let Some((lo, hi)) = a.forcerange {
                if lo > hi || lo.is_nan() || hi.is_nan() {
                    return bad(format!("actuator '{}': forcerange lower {lo} must be ≤ upper {hi}", a.name));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::io::mjcf::{load_mjcf, load_mjcf_str};
    use crate::{ParamSelection, StateSpace};

    fn superball(name: &str) -> crate::Model {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mjcf").join(name);
        load_mjcf(&p).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Both SUPERball files (copies of shared/models, spec 003 §4.0) load unchanged: 24 cables with the
    /// default class's stiffness, damping and rest length, 24 filter actuators, named parameters.
    #[test]
    fn superball_files_load_cables_and_filter_actuators() {
        for (file, free) in [("superball.xml", 6), ("superball_air.xml", 5)] {
            let m = superball(file);
            assert_eq!(m.joint_count(), free, "{file}");
            assert_eq!((m.cables.len(), m.nu(), m.na()), (24, 24, 24), "{file}");
            let c = &m.cables[16]; // n4–n8: both ends on free rods
            assert_eq!((c.stiffness, c.damping, c.springlength), (10000.0, 1000.0, (0.95, 0.95)));
            assert!((c.site[0].norm() - 0.842).abs() < 1e-12 && (c.site[1].norm() - 0.842).abs() < 1e-12);
            let a = &m.cable_actuators[23];
            assert_eq!(
                (a.cable(), a.gain, a.timeconst, a.ctrlrange),
                (Some(23), 1000.0, Some(1.0), Some((-100.0, 100.0)))
            );
            let sel = ParamSelection::by_names(
                &m,
                &["tendon_stiffness[c0]", "tendon_damping[c23]", "actuator_gain[a3]", "actuator_timeconst[a7]"],
            )
            .unwrap();
            assert_eq!(m.params_get(&sel), vec![10000.0, 1000.0, 1000.0, 1.0]);
            assert_eq!(crate::GenState::rest(&m).act.len(), 24);
            assert_eq!(crate::GenState::tangent_dim(&m), 2 * m.nv() + 24);
        }
        // rod0 is welded to the world in the air model: its cables end on the fixed world body
        let m = superball("superball_air.xml");
        assert!(m.body_fixed[m.cables[0].body[0]]);
    }

    /// MuJoCo's defaults and forms: springlength "-1 -1" = the length at qpos0, two values = a dead band, a
    /// `<motor>` (gain = gear, no state), affine bias × gear; unsupported forms are warned and left in extras;
    /// bad values are errors naming the element.
    #[test]
    fn cable_forms_defaults_and_errors() {
        let xml = |extra: &str| {
            format!(
                r#"<mujoco><worldbody><site name="w" pos="0 0 2"/>
                <body name="b" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" mass="1"/>
                <site name="s" pos="0.3 0 0"/></body></worldbody>
                <tendon><spatial name="t0"><site site="w"/><site site="s"/></spatial>
                <spatial name="t1" stiffness="5" springlength="0.5 1.5" damping="2"><site site="w"/><site site="s"/></spatial>
                <fixed name="f"><joint joint="j" coef="1"/></fixed></tendon>
                <actuator><motor name="m" tendon="t0" gear="3"/>
                <general name="g" tendon="t1" gear="2" gainprm="4" biastype="affine" biasprm="1 2 3" dyntype="filter" dynprm="0.5"/>
                {extra}</actuator></mujoco>"#
            )
        };
        let m = load_mjcf_str(
            &xml("").replace(r#"<fixed name="f"><joint joint="j" coef="1"/></fixed>"#, ""),
            "c.xml",
            None,
        )
        .unwrap();
        let l0 = (0.3f64 * 0.3 + 1.0).sqrt();
        assert!(
            (m.cables[0].springlength.0 - l0).abs() < 1e-12 && m.cables[0].springlength.0 == m.cables[0].springlength.1
        );
        assert_eq!((m.cables[1].springlength, m.cables[1].stiffness, m.cables[1].damping), ((0.5, 1.5), 5.0, 2.0));
        let (mo, g) = (&m.cable_actuators[0], &m.cable_actuators[1]);
        assert_eq!((mo.gain, mo.timeconst, mo.bias), (3.0, None, [0.0; 3]));
        assert_eq!((g.gain, g.timeconst, g.bias), (8.0, Some(0.5), [2.0, 8.0, 12.0]));
        assert_eq!((m.nu(), m.na()), (2, 1));
        assert_eq!(m.act_index(), vec![None, Some(0)]);
        // a joint tendon is kept raw only
        let xml_j = xml("").replace(r#"<freejoint/>"#, r#"<joint name="j" type="slide"/>"#);
        let m = load_mjcf_str(&xml_j, "c.xml", None).unwrap();
        assert_eq!(m.cables.len(), 2);
        assert!(m.extras.warnings.iter().any(|w| w.contains("tendon/fixed")), "{:?}", m.extras.warnings);
        // a filter with τ = 0: an error naming the element
        let bad = xml("")
            .replace(r#"dynprm="0.5""#, r#"dynprm="0""#)
            .replace(r#"<fixed name="f"><joint joint="j" coef="1"/></fixed>"#, "");
        let e = load_mjcf_str(&bad, "c.xml", None).unwrap_err().to_string();
        assert!(e.contains("general") && e.contains("time constant"), "{e}");
        // parameters are validated: negative stiffness is refused, the model unchanged
        let mut m = crate::builder::tensegrity_prism();
        let e = m.param_set_by_name("tendon_stiffness[c2]", -1.0).unwrap_err().to_string();
        assert!(e.contains("tendon_stiffness") && e.contains("'c2'"), "{e}");
        assert_eq!(m.cables[2].stiffness, 10000.0);
        m.param_set_by_name("actuator_timeconst[a1]", 0.25).unwrap();
        assert_eq!(m.cable_actuators[1].timeconst, Some(0.25));
    }

    /// Joint actuators as MuJoCo compiles them (values read from mujoco 4.0's `actuator_gainprm`,
    /// `actuator_biasprm`, `actuator_gear`, `actuator_forcerange` of the same elements): the shortcuts' expansions,
    /// gear folded in (gain × g, bias × (g, g², g²), forcerange × g sorted), shortcut defaults that a `<general>`
    /// inherits; ball joints refused, site transmissions warned.
    #[test]
    fn joint_actuators_expand_as_mujoco() {
        let xml = |acts: &str| {
            format!(
                r#"<mujoco><default><default class="pd"><position kp="5" kv="1"/></default>
                <default class="g4"><general gainprm="4"/></default></default>
                <worldbody><body><joint name="h" type="hinge"/><geom size=".1" mass="1"/><site name="s"/>
                <body><joint name="sl" type="slide"/><joint name="b" type="ball"/><geom size=".1" mass="1"/></body>
                </body></worldbody><actuator>{acts}</actuator></mujoco>"#
            )
        };
        let m = load_mjcf_str(
            &xml(r#"<motor name="m" joint="h" gear="2" ctrlrange="-1 1" forcerange="-2 2"/>
                <position name="p" joint="sl" kp="10" kv="2" gear="-3" forcerange="-1 2"/>
                <velocity name="v" joint="h" kv="3"/>
                <general name="gd" joint="h" class="pd"/>
                <position name="pd7" joint="h" class="pd" kp="7"/>
                <motor name="md" joint="h" class="pd"/>
                <position name="p4" joint="h" class="g4"/>
                <general name="f" joint="sl" dyntype="filter" dynprm="0.3" ctrlrange="0 1" ctrllimited="false"/>"#),
            "a.xml",
            None,
        )
        .unwrap();
        let got: Vec<_> = m
            .cable_actuators
            .iter()
            .map(|a| (a.name.as_str(), a.transmission, a.gain, a.bias, a.forcerange, a.ctrlrange, a.timeconst))
            .collect();
        use super::Transmission::Joint;
        let (h, sl) = (Joint(0), Joint(1));
        assert_eq!(
            got,
            vec![
                ("m", h, 2.0, [0.0; 3], Some((-4.0, 4.0)), Some((-1.0, 1.0)), None),
                ("p", sl, -30.0, [0.0, -90.0, -18.0], Some((-6.0, 3.0)), None, None),
                ("v", h, 3.0, [0.0, 0.0, -3.0], None, None, None),
                ("gd", h, 5.0, [0.0, -5.0, -1.0], None, None, None),
                ("pd7", h, 7.0, [0.0, -7.0, -1.0], None, None, None),
                ("md", h, 1.0, [0.0; 3], None, None, None),
                ("p4", h, 4.0, [0.0, -4.0, 0.0], None, None, None),
                ("f", sl, 1.0, [0.0; 3], None, None, Some(0.3)),
            ]
        );
        assert_eq!((m.nu(), m.na()), (8, 1));
        assert_eq!(m.cable_actuators[0].cable(), None);
        // a ball joint: an error naming the element; a site transmission / muscle: warned, not simulated
        let e = load_mjcf_str(&xml(r#"<motor name="mb" joint="b"/>"#), "a.xml", None).unwrap_err().to_string();
        assert!(e.contains("a.xml") && e.contains("'mb'") && e.contains("Ball"), "{e}");
        let m =
            load_mjcf_str(&xml(r#"<motor name="ms" site="s"/><damper name="d" joint="h"/>"#), "a.xml", None).unwrap();
        assert_eq!(m.nu(), 0);
        for w in ["'ms' (site / body transmission)", "'d' (<damper>)"] {
            assert!(m.extras.warnings.iter().any(|x| x.contains(w)), "{w}: {:?}", m.extras.warnings);
        }
    }

    /// The linear contact model: off for both SUPERball files as they are; on with a `<custom><numeric
    /// name="torsion_linear_contact">`, its 5 global parameters named in the table; bad data and out-of-range values
    /// are errors naming the element / parameter; the prism-on-ground builder turns it on.
    #[test]
    fn linear_contact_from_mjcf_and_parameters() {
        assert!(superball("superball.xml").tensegrity_contact.is_none());
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mjcf/superball.xml");
        let text = std::fs::read_to_string(p).unwrap();
        let with = |data: &str| {
            text.replace(
                "</mujoco>",
                &format!(r#"<custom><numeric name="torsion_linear_contact" data="{data}"/></custom></mujoco>"#),
            )
        };
        let mut m = load_mjcf_str(&with("0.3 0.2 0.4 0.9 0.01"), "sb.xml", None).unwrap();
        let lc = m.tensegrity_contact.unwrap();
        assert_eq!((lc.beta, lc.e, lc.gamma, lc.mu, lc.eps), (0.3, 0.2, 0.4, 0.9, 0.01));
        assert!(!m.extras.warnings.iter().any(|w| w.contains("custom")), "{:?}", m.extras.warnings);
        let sel = ParamSelection::by_names(&m, &crate::tendon::LINEAR_CONTACT_NAMES).unwrap();
        assert_eq!(m.params_get(&sel), vec![0.3, 0.2, 0.4, 0.9, 0.01]);
        m.param_set_by_name("contact_mu", 0.25).unwrap();
        assert_eq!(m.tensegrity_contact.unwrap().mu, 0.25);
        let e = m.param_set_by_name("contact_beta", 1.5).unwrap_err().to_string();
        assert!(e.contains("contact_beta"), "{e}");
        assert_eq!(m.tensegrity_contact.unwrap().beta, 0.3);
        let e = load_mjcf_str(&with("0.3 0.2 0.4"), "sb.xml", None).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("sb.xml") && e.contains("numeric") && e.contains("line") && e.contains("5"), "{e}");
        let e = load_mjcf_str(&with("0.3 0.2 0.4 0.9 1.5"), "sb.xml", None).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("contact_eps"), "{e}");
        let e = load_mjcf_str(&with("0.3 2 0.4 0.9 0.01"), "sb.xml", None).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("contact_e ") && e.contains("line"), "{e}");
        // no contact model: no contact_* entries
        assert!(ParamSelection::by_prefix(&superball("superball.xml"), "contact_").is_empty());
        let g = crate::builder::tensegrity_prism_on_ground();
        assert_eq!(g.tensegrity_contact, Some(crate::LinearContact::default()));
        assert_eq!(ParamSelection::by_prefix(&g, "contact_").len(), 5);
    }

    /// The 3-bar file (spec 003 §4.6, decisions.md "The 3-bar"): 3 free rods, 9 cables with SUPERball's
    /// constants, 3 filter motors on the side cables, gravity 0.1 g from the file; at the file pose every cable is
    /// stretched (pretension) and the cable forces alone balance on every rod (the 150° prism's self-stress).
    #[test]
    fn three_bar_file_loads_pretensioned_in_equilibrium() {
        let m = superball("tensegrity_3bar.xml");
        assert_eq!((m.joint_count(), m.nv(), m.cables.len(), m.nu(), m.na()), (3, 18, 9, 3, 3));
        assert_eq!(m.gravity, torsion_math::Vec3::new(0.0, 0.0, -0.981));
        let driven: Vec<_> = m.cable_actuators.iter().map(|a| m.cables[a.cable().unwrap()].name.as_str()).collect();
        assert_eq!(driven, ["c6", "c7", "c8"]);
        let sb = superball("superball.xml");
        let a = &m.cable_actuators[0];
        assert_eq!((a.gain, a.timeconst, a.ctrlrange), (1000.0, Some(1.0), Some((-100.0, 100.0))));
        assert_eq!(m.body_mass[1..], sb.body_mass[1..4]);
        assert_eq!(m.shapes.len(), 4);
        let pose = m.forward_kinematics(&m.qpos0).unwrap();
        let (mut force, mut torque) = (vec![torsion_math::Vec3::zeros(); 4], vec![torsion_math::Vec3::zeros(); 4]);
        for c in &m.cables {
            assert_eq!((c.stiffness, c.damping), (10000.0, 1000.0), "{}", c.name);
            let arm = |e: usize| pose[c.body[e]].1.rotate(&c.site[e]);
            let x = |e: usize| pose[c.body[e]].0 + arm(e);
            let d = x(1) - x(0);
            let stretch = d.norm() - c.springlength.0;
            assert!(stretch > 0.04, "{}: stretch {stretch}", c.name);
            // tension pulls end 0 towards end 1 and back
            let f = d.normalize() * (c.stiffness * stretch);
            for (e, fe) in [(0, f), (1, -f)] {
                force[c.body[e]] += fe;
                torque[c.body[e]] += arm(e).cross(&fe);
            }
        }
        for b in 1..4 {
            eprintln!("rod {b}: net cable force {:.1e} N, torque {:.1e} N m", force[b].norm(), torque[b].norm());
            assert!(force[b].norm() < 1e-6 && torque[b].norm() < 1e-6, "rod {b}: {} {}", force[b], torque[b]);
        }
        // the bottom caps touch the floor
        let low = (1..4).map(|b| pose[b].0.z - pose[b].1.rotate(&m.cables[0].site[0]).z.abs()).fold(f64::MAX, f64::min);
        assert!((low - 0.02).abs() < 1e-9, "{low}");
        // a cable to a missing node: an error naming the file, the line and the site
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mjcf/tensegrity_3bar.xml");
        let bad = std::fs::read_to_string(p)
            .unwrap()
            .replace(r#"<site site="n3"/></spatial>"#, r#"<site site="n9"/></spatial>"#);
        let e = load_mjcf_str(&bad, "tensegrity_3bar.xml", None).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("tensegrity_3bar.xml") && e.contains("line") && e.contains("'n9'"), "{e}");
    }

    /// The 3-bar prism: 9 pretensioned cables (every one longer than its rest length), 3 filter actuators.
    #[test]
    fn prism_is_pretensioned() {
        let m = crate::builder::tensegrity_prism();
        assert_eq!((m.cables.len(), m.nu(), m.na(), m.nv()), (9, 3, 3, 18));
        let pose = m.forward_kinematics(&m.qpos0).unwrap();
        for c in &m.cables {
            let x = |e: usize| pose[c.body[e]].0 + pose[c.body[e]].1.rotate(&c.site[e]);
            let l = (x(1) - x(0)).norm();
            assert!((l * 0.95 - c.springlength.0).abs() < 1e-12, "{}: {l}", c.name);
        }
    }
}
