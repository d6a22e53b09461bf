//! Seeded xorshift64 (13, 7, 17) samples for reproducible tests, benchmarks and network initialisations (no
//! dependency): the one home of torsion's small generator.

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
