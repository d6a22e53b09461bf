//! Seeded generators for reproducible tests, benchmarks, samples and network initialisations (no dependency): the
//! one home of torsion's small generators — xorshift64 (13, 7, 17) and SplitMix64 with Box–Muller normals.

/// xorshift64 with shifts (13, 7, 17); the state must not be 0.
#[derive(Clone, Debug)]
pub struct XorShift(pub u64);

impl XorShift {
    /// Uniform in [0, 1) (53 bits).
    pub fn u(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [−1, 1).
    pub fn sym(&mut self) -> f64 {
        2.0 * self.u() - 1.0
    }
}

/// SplitMix64 (Steele, Lea & Flood 2014): any state, including 0.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) (53 bits).
    pub fn u(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Seeded normal samples: SplitMix64 + Box–Muller (one of each pair).
#[derive(Clone, Debug)]
pub struct Normal(SplitMix64);

impl Normal {
    pub fn new(seed: u64) -> Self {
        Normal(SplitMix64(seed))
    }
    /// N(0, 1)
    pub fn sample(&mut self) -> f64 {
        self.scaled(1.0)
    }
    /// N(0, σ²)
    pub fn scaled(&mut self, sigma: f64) -> f64 {
        let (a, b) = (self.0.u().max(1e-300), self.0.u());
        sigma * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}
