//! The documented signal filter of the regressor residual (issue 14 item 4a): every recorded signal (q, v, τ)
//! passes a zero-phase low-pass, a 2nd-order Butterworth run forwards and backwards (filtfilt: magnitude
//! |H(f)|² = 1 / (1 + (f/f_c)⁴), no delay, so q, v, v̇ and τ stay aligned), and v̇ (and v when the recording
//! has none) is the central difference of the filtered signal. The first and last [`edge_samples`] samples carry
//! the filter's start-up transient and are dropped by the caller.

/// Zero-phase 2nd-order Butterworth low-pass of `x` (sampled every `dt` s) at `cutoff_hz`, in place. As scipy's
/// `filtfilt`, the signal is extended at both ends by its odd reflection (2 x₀ − x_k: value and slope continue)
/// over [`pad_samples`], and each pass starts from rest at its first value. A cutoff at or above Nyquist leaves
/// `x` unchanged.
pub fn lowpass_zero_phase(x: &mut [f64], dt: f64, cutoff_hz: f64) {
    let n = x.len();
    if n < 3 || cutoff_hz.is_nan() || cutoff_hz <= 0.0 || cutoff_hz * dt >= 0.5 {
        return;
    }
    // bilinear transform with pre-warping
    let k = (std::f64::consts::PI * cutoff_hz * dt).tan();
    let s2 = std::f64::consts::SQRT_2;
    let norm = 1.0 / (1.0 + s2 * k + k * k);
    let b0 = k * k * norm;
    let (b1, b2) = (2.0 * b0, b0);
    let a1 = 2.0 * (k * k - 1.0) * norm;
    let a2 = (1.0 - s2 * k + k * k) * norm;
    let pad = pad_samples(dt, cutoff_hz).min(n - 1);
    let mut y = Vec::with_capacity(n + 2 * pad);
    y.extend((1..=pad).rev().map(|i| 2.0 * x[0] - x[i]));
    y.extend_from_slice(x);
    y.extend((1..=pad).map(|i| 2.0 * x[n - 1] - x[n - 1 - i]));
    let pass = |y: &mut [f64], rev: bool| {
        let m = y.len();
        let idx = |i: usize| if rev { m - 1 - i } else { i };
        let y0 = y[idx(0)];
        let (mut x1, mut x2, mut y1, mut y2) = (y0, y0, y0, y0);
        for i in 0..m {
            let xi = y[idx(i)];
            let out = b0 * xi + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
            (x2, x1, y2, y1) = (x1, xi, y1, out);
            y[idx(i)] = out;
        }
    };
    pass(&mut y, false);
    pass(&mut y, true);
    x.copy_from_slice(&y[pad..pad + n]);
}

/// The reflection padding of [`lowpass_zero_phase`]: ten time constants of the filter's poles
/// (10 / (ζ ω_c) with ζ = 1/√2: e⁻¹⁰ of the start-up transient is left).
pub fn pad_samples(dt: f64, cutoff_hz: f64) -> usize {
    (10.0 * std::f64::consts::SQRT_2 / (2.0 * std::f64::consts::PI * cutoff_hz * dt)).ceil() as usize
}

/// d x / d t by central differences (one-sided at the two ends).
pub fn derivative(x: &[f64], dt: f64) -> Vec<f64> {
    let n = x.len();
    if n < 2 {
        return vec![0.0; n];
    }
    (0..n)
        .map(|i| match i {
            0 => (x[1] - x[0]) / dt,
            _ if i == n - 1 => (x[n - 1] - x[n - 2]) / dt,
            _ => (x[i + 1] - x[i - 1]) / (2.0 * dt),
        })
        .collect()
}

/// Samples at each end to drop after [`lowpass_zero_phase`] (the reflection continues value and slope only; the
/// end values carry noise): five time constants 5 / (ζ ω_c), at least 2 samples for the central difference.
pub fn edge_samples(dt: f64, cutoff_hz: f64) -> usize {
    if cutoff_hz.is_nan() || cutoff_hz <= 0.0 || cutoff_hz * dt >= 0.5 {
        return 1;
    }
    ((5.0 * std::f64::consts::SQRT_2 / (2.0 * std::f64::consts::PI * cutoff_hz * dt)).ceil() as usize).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn zero_phase_lowpass_keeps_slow_motion_and_removes_fast() {
        let (dt, fc, n) = (1e-3, 10.0, 4000);
        let t = |i: usize| i as f64 * dt;
        let mut slow: Vec<f64> = (0..n).map(|i| (2.0 * PI * t(i)).sin()).collect();
        let mut fast: Vec<f64> = (0..n).map(|i| (2.0 * PI * 200.0 * t(i)).sin()).collect();
        lowpass_zero_phase(&mut slow, dt, fc);
        lowpass_zero_phase(&mut fast, dt, fc);
        let (e, pad) = (edge_samples(dt, fc), pad_samples(dt, fc));
        let mut worst = (0.0f64, 0.0f64);
        for i in e..n - e {
            // |H(1 Hz)|² = 1/(1 + 1e-4): no phase shift, gain 1 − 1e-4
            worst.0 = worst.0.max((slow[i] - (2.0 * PI * t(i)).sin()).abs());
        }
        // |H(200 Hz)|² < (10/200)⁴; away from the ends, where the reflection of a full-amplitude 200 Hz wave steps
        for v in &fast[pad..n - pad] {
            worst.1 = worst.1.max(v.abs());
        }
        assert!(worst.0 < 2e-4, "1 Hz through a 10 Hz zero-phase low-pass: error {}", worst.0);
        assert!(worst.1 < 1e-4, "200 Hz left: {}", worst.1);
    }

    #[test]
    fn derivative_of_a_filtered_sine() {
        let (dt, fc, n) = (1e-3, 20.0, 3000);
        let mut x: Vec<f64> = (0..n).map(|i| (3.0 * i as f64 * dt).sin()).collect();
        lowpass_zero_phase(&mut x, dt, fc);
        let d = derivative(&x, dt);
        let e = edge_samples(dt, fc);
        let err = (e..n - e).map(|i| (d[i] - 3.0 * (3.0 * i as f64 * dt).cos()).abs()).fold(0.0, f64::max);
        assert!(err < 1e-3, "{err}");
    }
}
