//! What a measurement must look like to be trusted: checked on import, and required of
//! every winner whatever wrote it.

use crate::model::{Measurement, NewRun};
use crate::settings::Settings;

/// Floating-point operations, or bytes, per second that no CPU reaches (100 T/s: several
/// times the peak of the largest servers). A time implying more is a wrong time.
pub const MAX_RATE_PER_S: f64 = 1e14;

/// The SQL condition (aliases `m` for the measurement, `r` for its run) that keeps
/// winners to positive times at plausible rates. SQLite stores no NaN (it becomes NULL).
pub(crate) const PLAUSIBLE_WHERE: &str = "m.median_s > 0 \
     AND (r.float_ops IS NULL OR r.float_ops / m.median_s <= 1e14) \
     AND r.bytes / m.median_s <= 1e14";

/// Why `m`, measured in a run started as `run`, cannot be trusted; `Ok` if it can.
///
/// Every time given must be a positive finite number, every setting given a finite number
/// not below zero; an `ok` measurement must have a median, between its minimum and maximum,
/// at a plausible rate.
pub(crate) fn check_measurement(run: &NewRun, m: &Measurement) -> Result<(), String> {
    check_settings(&m.settings)?;
    let times = [
        ("median_s", m.median_s),
        ("min_s", m.min_s),
        ("max_s", m.max_s),
    ];
    for (name, time) in times {
        if let Some(t) = time.filter(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(format!("{name} = {t} is not a positive time"));
        }
    }
    if !m.status.is_ok() {
        return Ok(());
    }
    let median = m.median_s.ok_or("an `ok` measurement has no median_s")?;
    if m.min_s.is_some_and(|min| min > median) || m.max_s.is_some_and(|max| max < median) {
        return Err(format!(
            "median_s = {median} is not between min_s and max_s"
        ));
    }
    check_rate("GFLOP/s", run.float_ops.unwrap_or(0), median)?;
    check_rate("GB/s", run.bytes, median)
}

/// Fails when a setting's number is negative or not finite (a time, or the tolerance).
fn check_settings(s: &Settings) -> Result<(), String> {
    let numbers = [
        ("min_time_s", s.min_time_s),
        ("cutoff_s", s.cutoff_s),
        ("tolerance", s.tolerance),
        ("elapsed_s", s.elapsed_s),
        ("compile_s", s.compile_s),
    ];
    for (name, value) in numbers {
        if let Some(x) = value.filter(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(format!(
                "settings.{name} = {x} is not a number of zero or more"
            ));
        }
    }
    Ok(())
}

/// Fails when `amount` per call in `seconds` is more than [`MAX_RATE_PER_S`].
fn check_rate(unit: &str, amount: u64, seconds: f64) -> Result<(), String> {
    let rate = amount as f64 / seconds;
    if rate > MAX_RATE_PER_S {
        return Err(format!(
            "median_s = {seconds} implies {:.3e} {unit}, more than any CPU reaches",
            rate / 1e9
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::MAX_RATE_PER_S;

    #[test]
    fn the_sql_limit_is_the_rust_limit() {
        assert!(super::PLAUSIBLE_WHERE.contains(&format!("{MAX_RATE_PER_S:e}")));
    }
}
