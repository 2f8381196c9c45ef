//! Confirmation: the run's best schedules re-measured in a fresh worker, and the rule that
//! decides whether a re-measurement confirms its search time or is measured again (and at
//! last recorded as unstable).

use crate::worker::Outcome;
use std::time::Duration;

/// What measuring a candidate gave, before it is recorded.
pub(super) struct Measured {
    /// The last outcome.
    pub(super) outcome: Outcome,
    /// How long measuring took, compiling included.
    pub(super) wall: Duration,
    /// Every timed confirmation, in order (empty unless confirming).
    pub(super) confirmations: Vec<f64>,
}

/// How far a confirmation may be from its search time, either way, and still confirm it.
/// Two workers' times of one schedule differ by noise, a few percent; twice or half is not
/// the schedule but the machine (busy with something else during one of the two: the issue
/// that led here saw a confirmation 140 times its search time, and took it as the winner's).
pub const MAX_DISAGREEMENT: f64 = 2.0;

/// How many more times a confirmation that disagrees with its search time is measured
/// before it is recorded as unstable ([`Status::Unstable`]).
pub const EXTRA_CONFIRMATIONS: usize = 2;

/// How long to wait before each extra confirmation. On the shared machines strata is
/// measured on, a kernel runs at half speed for spells of 0.3 to 2 seconds that nothing in
/// the process causes (`strata_jit::timing`); confirmations measured back to back fell into
/// one spell together (a matmul schedule searched at 0.90 ms was confirmed at 2.22, 2.14 and
/// 2.16 ms, so it was not trusted and the default won). Waiting lets the spell pass.
pub const CONFIRM_PAUSES: [Duration; EXTRA_CONFIRMATIONS] =
    [Duration::from_millis(500), Duration::from_millis(1500)];

/// What a schedule's confirmations so far say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// This confirmation (the last) agrees with the search time: it is the confirmed time.
    Confirmed(f64),
    /// None agrees yet, and another may be measured.
    MeasureAgain,
    /// None of the `1 + EXTRA_CONFIRMATIONS` agrees: the times are not trusted.
    Unstable,
}

/// Whether `confirmed_s` is within [`MAX_DISAGREEMENT`] of `search_s`, either way.
pub fn agrees(search_s: f64, confirmed_s: f64) -> bool {
    let ratio = confirmed_s / search_s;
    ratio.is_finite() && (1.0 / MAX_DISAGREEMENT..=MAX_DISAGREEMENT).contains(&ratio)
}

/// The verdict on the timed confirmations of a schedule measured at `search_s`, in order
/// (measuring stops at the first that agrees).
pub fn confirmation_verdict(search_s: f64, confirmations: &[f64]) -> Verdict {
    match confirmations.last() {
        Some(&t) if agrees(search_s, t) => Verdict::Confirmed(t),
        Some(_) if confirmations.len() > EXTRA_CONFIRMATIONS => Verdict::Unstable,
        _ => Verdict::MeasureAgain,
    }
}

/// Why confirmations of a schedule measured at `search_s` are not trusted, in words; `None`
/// when the last agrees, or none was timed (a failure is recorded as itself). A confirmation
/// cut short (by the time budget) after disagreeing is not trusted either.
pub fn unstable_detail(search_s: f64, confirmations: &[f64]) -> Option<String> {
    let &last = confirmations.last()?;
    if agrees(search_s, last) {
        return None;
    }
    let times: Vec<String> = confirmations.iter().map(|&t| ms_text(t)).collect();
    Some(format!(
        "search {}, confirmations {}: more than {MAX_DISAGREEMENT}x apart, so none is trusted",
        ms_text(search_s),
        times.join(", ")
    ))
}

/// Seconds as milliseconds with four significant decimals (`1.2000 ms`).
fn ms_text(seconds: f64) -> String {
    format!("{:.4} ms", seconds * 1e3)
}

/// Confirms a schedule measured at `search_s`: `measure(attempt)` until a time agrees, at
/// most `1 + EXTRA_CONFIRMATIONS` times ([`confirmation_verdict`]); a failure ends it at once.
/// `measure` gets the attempt's number, from 0 (it pauses before the later ones:
/// [`CONFIRM_PAUSES`]). `None` when the first gave nothing to record (interrupted, out of time).
pub(super) fn confirm_with(
    search_s: f64,
    mut measure: impl FnMut(usize) -> Option<(Outcome, Duration)>,
) -> Option<Measured> {
    let (mut outcome, mut wall) = measure(0)?;
    let mut confirmations = Vec::new();
    while let Outcome::Timed { median_s, .. } = outcome {
        confirmations.push(median_s);
        if confirmation_verdict(search_s, &confirmations) != Verdict::MeasureAgain {
            break;
        }
        match measure(confirmations.len()) {
            Some((next, took)) => (outcome, wall) = (next, wall + took),
            None => break,
        }
    }
    Some(Measured {
        outcome,
        wall,
        confirmations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(median_s: f64) -> Option<(Outcome, Duration)> {
        let outcome = Outcome::Timed {
            median_s,
            min_s: median_s,
            max_s: median_s,
            runs: 3,
            compile_s: 0.0,
        };
        Some((outcome, Duration::from_millis(10)))
    }

    /// Within twice or half the search time agrees; further, or not a time, does not.
    #[test]
    fn agreement_is_within_the_stated_factor_either_way() {
        assert!(agrees(1.0, 1.0));
        assert!(agrees(1.0, MAX_DISAGREEMENT));
        assert!(agrees(1.0, 1.0 / MAX_DISAGREEMENT));
        assert!(!agrees(1.0, MAX_DISAGREEMENT * 1.01));
        assert!(!agrees(1.0, 0.99 / MAX_DISAGREEMENT));
        assert!(!agrees(1.2e-3, 168e-3), "the issue's 140x");
        assert!(!agrees(0.0, 1.0));
        assert!(!agrees(1.0, f64::NAN));
    }

    #[test]
    fn the_verdict_measures_again_then_gives_up() {
        let search = 1.2e-3;
        assert_eq!(confirmation_verdict(search, &[]), Verdict::MeasureAgain);
        assert_eq!(
            confirmation_verdict(search, &[1.3e-3]),
            Verdict::Confirmed(1.3e-3)
        );
        assert_eq!(
            confirmation_verdict(search, &[168e-3]),
            Verdict::MeasureAgain
        );
        assert_eq!(
            confirmation_verdict(search, &[168e-3, 1.25e-3]),
            Verdict::Confirmed(1.25e-3)
        );
        let all_slow = [168e-3, 170e-3, 171e-3];
        assert_eq!(all_slow.len(), 1 + EXTRA_CONFIRMATIONS);
        assert_eq!(confirmation_verdict(search, &all_slow), Verdict::Unstable);
    }

    #[test]
    fn the_unstable_detail_names_every_time() {
        let detail = unstable_detail(1.2e-3, &[168e-3, 170e-3, 171e-3]).unwrap();
        assert_eq!(
            detail,
            "search 1.2000 ms, confirmations 168.0000 ms, 170.0000 ms, 171.0000 ms: more than \
             2x apart, so none is trusted"
        );
        assert_eq!(unstable_detail(1.2e-3, &[168e-3, 1.25e-3]), None);
        assert_eq!(unstable_detail(1.2e-3, &[]), None);
        // Cut short after one disagreeing time: not trusted either.
        assert!(unstable_detail(1.2e-3, &[168e-3]).is_some());
    }

    /// The loop with a measurement that stays slow: three measurements, all kept.
    #[test]
    fn a_confirmation_that_stays_slow_is_measured_three_times() {
        let mut attempts = Vec::new();
        let measured = confirm_with(1.2e-3, |attempt| {
            attempts.push(attempt);
            timed(0.169 + attempt as f64 * 1e-3)
        })
        .unwrap();
        assert_eq!(attempts, [0, 1, 2], "numbered for their pauses");
        assert_eq!(attempts.len(), 1 + EXTRA_CONFIRMATIONS);
        assert_eq!(measured.confirmations, [0.169, 0.170, 0.171]);
        assert_eq!(measured.wall, Duration::from_millis(30));
        assert!(unstable_detail(1.2e-3, &measured.confirmations).is_some());
    }

    /// A slow first confirmation followed by one that agrees: that one is the time.
    #[test]
    fn a_confirmation_that_recovers_is_trusted() {
        let mut times = vec![1.25e-3, 0.168].into_iter().collect::<Vec<_>>();
        let measured = confirm_with(1.2e-3, |_| timed(times.pop().unwrap())).unwrap();
        assert_eq!(measured.confirmations, [0.168, 1.25e-3]);
        assert!(matches!(measured.outcome, Outcome::Timed { median_s, .. } if median_s == 1.25e-3));
        assert_eq!(unstable_detail(1.2e-3, &measured.confirmations), None);
    }

    /// A failure ends the confirmation at once, as itself; nothing measured is `None`.
    #[test]
    fn a_failed_or_abandoned_confirmation_stops() {
        let crash = |_: usize| Some((Outcome::Crash("SIGSEGV".into()), Duration::ZERO));
        let measured = confirm_with(1.2e-3, crash).unwrap();
        assert!(matches!(measured.outcome, Outcome::Crash(_)));
        assert!(measured.confirmations.is_empty());
        assert!(confirm_with(1.2e-3, |_| None).is_none());
        let mut first = true;
        let cut_short = confirm_with(1.2e-3, |_| {
            std::mem::take(&mut first).then(|| timed(0.168)).flatten()
        })
        .unwrap();
        assert_eq!(cut_short.confirmations, [0.168]);
    }
}
