//! Model elements that loaders parse and keep for later use (sites, actuators, tendons) and the loader's
//! warnings about what it did not use. Nothing here is read by the solvers yet.
use torsion_math::{Quat, Vec3};

/// Raw XML attributes (name, value) after MJCF default classes were applied, in file order then class order.
pub type Attrs = Vec<(String, String)>;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelExtras {
    pub sites: Vec<Site>,
    pub actuators: Vec<Actuator>,
    pub tendons: Vec<Tendon>,
    /// Each unsupported element or attribute kind, reported once (e.g. "contact/exclude ignored",
    /// "option@integrator ignored", "geom@solref ignored").
    pub warnings: Vec<String>,
}

impl ModelExtras {
    pub fn site_index(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name == name)
    }
    pub fn actuator_index(&self, name: &str) -> Option<usize> {
        self.actuators.iter().position(|a| a.name == name)
    }
    pub fn tendon_index(&self, name: &str) -> Option<usize> {
        self.tendons.iter().position(|t| t.name == name)
    }
    /// Add a warning unless the same text is already there.
    pub fn warn(&mut self, w: impl Into<String>) {
        let w = w.into();
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }
}

/// A named point/frame on a body (MJCF `<site>`).
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub name: String,
    /// body index in the model
    pub body: usize,
    /// pose in the body frame (COM frame): position, m, and orientation site → body
    pub pose: (Vec3, Quat),
}

/// What an actuator acts on (MJCF `joint` / `tendon` / `site` / `body` attribute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActuatorTarget {
    Joint(String),
    Tendon(String),
    Site(String),
    Body(String),
}

/// An MJCF actuator (`<motor>`, `<position>`, `<velocity>`, `<general>`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct Actuator {
    pub name: String,
    /// the element name: "motor", "position", "velocity", "general", …
    pub kind: String,
    pub target: ActuatorTarget,
    /// MuJoCo gear (first entry scales a joint/tendon actuator; six for site actuators)
    pub gear: [f64; 6],
    /// control range [lo, hi] (as written: no unit conversion)
    pub ctrlrange: (f64, f64),
    /// whether the control is clamped to `ctrlrange` (MuJoCo "auto": when a range is given)
    pub ctrllimited: bool,
    /// all attributes, defaults applied (kp, kv, gainprm, biasprm, forcerange, …)
    pub attrs: Attrs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TendonKind {
    /// `<fixed>`: a linear combination of joint positions
    Fixed,
    /// `<spatial>`: a path through sites, wrapping around geoms
    Spatial,
}

/// An MJCF tendon, kept raw.
#[derive(Clone, Debug, PartialEq)]
pub struct Tendon {
    pub name: String,
    pub kind: TendonKind,
    /// attributes of the tendon element, defaults applied (stiffness, range, width, …)
    pub attrs: Attrs,
    /// child elements in order: (element name, its attributes), e.g. ("joint", [("joint", "j1"), ("coef", "1")])
    pub elements: Vec<(String, Attrs)>,
}
