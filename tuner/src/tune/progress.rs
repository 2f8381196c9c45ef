//! The progress shown on stderr while a run searches and confirms (indicatif; hidden without
//! `TuneOptions::progress`, and by indicatif when stderr is not a terminal).

use super::session::Session;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

impl Session<'_> {
    pub(super) fn confirm_spinner(&self, n: usize) -> ProgressBar {
        if !self.options.progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(n as u64);
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] confirming: re-measuring the best and the default \
             in a fresh worker {pos}/{len}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    pub(super) fn progress_bar(&self) -> ProgressBar {
        if !self.options.progress {
            return ProgressBar::hidden();
        }
        let (bar, template) = match self.options.trials {
            Some(n) => (
                ProgressBar::new(n),
                "{spinner} [{elapsed_precise}] trials {pos}/{len} {msg} (eta {eta})",
            ),
            None => (
                ProgressBar::new_spinner(),
                "{spinner} [{elapsed_precise}] trials {pos} {msg}",
            ),
        };
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    }

    /// The bar's message: this run's search best (with its trial; the cutoff's best may be
    /// an earlier run's, so it is not what is shown), its speedup over the default's search
    /// time, the rate and the failures.
    pub(super) fn update_bar(&self, bar: &ProgressBar, default: Option<f64>, start: Instant) {
        bar.set_position(self.trials);
        let fastest = self
            .timed
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds));
        let best = fastest.map_or("-".to_string(), |b| {
            let (flops, bytes) = self.work;
            let rate = if flops > 0 {
                format!("{:.2} GFLOP/s", flops as f64 / b.seconds / 1e9)
            } else {
                format!("{:.2} GB/s", bytes as f64 / b.seconds / 1e9)
            };
            format!("{:.4} ms (trial {}), {rate}", b.seconds * 1e3, b.trial)
        });
        let speedup = match (default, fastest) {
            (Some(d), Some(b)) if b.seconds > 0.0 => format!("{:.2}x", d / b.seconds),
            _ => "-".to_string(),
        };
        let per_minute = self.trials as f64 / start.elapsed().as_secs_f64().max(1e-9) * 60.0;
        let failures: Vec<String> = self
            .failures
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        bar.set_message(format!(
            "search best {best} ({speedup} over default), {per_minute:.0}/min, failures: {}",
            if failures.is_empty() {
                "none".into()
            } else {
                failures.join(", ")
            }
        ));
    }
}
