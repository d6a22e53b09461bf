//! Helpers shared by the benchmark binaries.
use std::process::ExitCode;

pub mod sweep;

/// A benchmark's exit: its JSON report pretty-printed on stdout, or `name: error` on stderr and a failure.
pub fn finish(name: &str, report: Result<serde_json::Value, String>) -> ExitCode {
    match report.and_then(|v| serde_json::to_string_pretty(&v).map_err(|e| e.to_string())) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Median of `v` (the mean of the two middle values for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// The least-squares slope of log(t) against log(n) (a growth exponent).
pub fn loglog_slope(ns: &[f64], ts: &[f64]) -> f64 {
    let (x, y): (Vec<f64>, Vec<f64>) = ns.iter().zip(ts).map(|(n, t)| (n.ln(), t.ln())).unzip();
    let k = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / k, y.iter().sum::<f64>() / k);
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

/// This thread's CPU time in seconds (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)` from the C library std links; NaN
/// elsewhere than Linux): on a loaded machine the wall clock also counts the time the thread waits for a core.
#[cfg(target_os = "linux")]
pub fn thread_cpu_s() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `t` (64-bit Linux layout: two 64-bit fields)
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc == 0 {
        t.sec as f64 + t.nsec as f64 * 1e-9
    } else {
        f64::NAN
    }
}
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_s() -> f64 {
    f64::NAN
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
