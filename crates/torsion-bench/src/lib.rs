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

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
