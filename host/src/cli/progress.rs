//! How a waiting client shows a running operation: one line per chart as
//! it starts and as it finishes (charts of a parallel group each get
//! theirs), the operation's current step when it changes, the elapsed time
//! and "N of M charts". On a terminal the same news is a block redrawn in
//! place: a bar, one row per chart, the current step.
//!
//! The lines are computed from what the daemon reports
//! ([`OperationCharts`], the app's progress line) by pure functions, so
//! tests check them without a terminal; [`View`] only decides what to
//! write and when. Must not talk to the daemon.

use std::io::Write;
use std::time::Duration;

use crate::api::wire::{ChartProgress, ChartState, OperationCharts};
use crate::store::OperationId;

/// The bar's width in cells.
const BAR_CELLS: usize = 20;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Lines appended as news arrives (not a terminal, `-o json|yaml`).
    Plain,
    /// A block redrawn in place, lines cut to `width` columns.
    Terminal {
        /// The terminal's width in columns.
        width: usize,
    },
}

impl Style {
    /// A terminal block when stderr is a terminal and the output is for a
    /// person; plain lines otherwise.
    pub(crate) fn for_output(for_person: bool) -> Style {
        if for_person && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let width = std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.parse().ok())
                .filter(|&w: &usize| w >= 20)
                .unwrap_or(80);
            Style::Terminal { width }
        } else {
            Style::Plain
        }
    }
}

/// What one poll of the daemon saw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen<'a> {
    /// Time since the client began waiting.
    pub elapsed: Duration,
    /// The app's state while the operation runs (`applying`).
    pub label: &'a str,
    /// The operation's current step, if it has one.
    pub step: Option<&'a str>,
    /// The charts' board, if the daemon keeps one for this operation.
    pub board: Option<&'a OperationCharts>,
}

/// Follows one operation's progress and writes it.
#[derive(Debug)]
pub(crate) struct View {
    style: Style,
    operation: OperationId,
    last_step: Option<String>,
    last_board: Option<OperationCharts>,
    /// Lines of the block drawn last (terminal style).
    drawn: usize,
}

impl View {
    /// A view of operation `operation`.
    pub(crate) fn new(style: Style, operation: OperationId) -> View {
        View {
            style,
            operation,
            last_step: None,
            last_board: None,
            drawn: 0,
        }
    }

    /// Writes what changed since the last poll to `out`.
    pub(crate) fn update(&mut self, out: &mut dyn Write, seen: Seen<'_>) -> std::io::Result<()> {
        let board = seen.board.filter(|b| b.operation == self.operation);
        let seen = Seen { board, ..seen };
        match self.style {
            Style::Plain => {
                let step = seen.step.filter(|s| self.last_step.as_deref() != Some(*s));
                for line in plain_lines(self.last_board.as_ref(), &seen, step) {
                    writeln!(out, "{line}")?;
                }
            }
            Style::Terminal { width } => {
                let lines = block_lines(&seen, width);
                out.write_all(redraw(self.drawn, &lines).as_bytes())?;
                self.drawn = lines.len();
            }
        }
        out.flush()?;
        if let Some(step) = seen.step {
            self.last_step = Some(step.to_owned());
        }
        if let Some(board) = board {
            self.last_board = Some(board.clone());
        }
        Ok(())
    }
}

/// `  [  1.2s] LABEL: TEXT (N of M charts)`.
fn line(elapsed: Duration, label: &str, text: &str, count: Option<(usize, usize)>) -> String {
    let mut line = format!("  [{:>5.1}s] {label}: {text}", elapsed.as_secs_f64());
    if let Some((n, m)) = count {
        line.push_str(&format!(" ({n} of {m} charts)"));
    }
    line
}

/// The plain lines one poll adds: each chart that started or ended since
/// the last poll, in the order the daemon saw it happen (an end before a
/// start at the same millisecond), then the step if it changed. `N of M`
/// counts the charts ended so far.
pub(crate) fn plain_lines(
    before: Option<&OperationCharts>,
    seen: &Seen<'_>,
    step: Option<&str>,
) -> Vec<String> {
    let mut lines = Vec::new();
    let Some(board) = seen.board else {
        if let Some(step) = step {
            lines.push(line(seen.elapsed, seen.label, step, None));
        }
        return lines;
    };
    let total = board.charts.len();
    let was = |chart: &ChartProgress| {
        before
            .filter(|b| b.operation == board.operation)
            .and_then(|b| b.charts.iter().find(|c| c.chart == chart.chart))
            .map_or(ChartState::Pending, |c| c.state)
    };
    let ended = |state| matches!(state, ChartState::Done | ChartState::Failed);
    let mut finished = board.charts.iter().filter(|c| ended(was(c))).count();
    // (when, 0 for an end and 1 for a start, the chart's place, the chart)
    let mut events: Vec<(u64, u8, usize, &ChartProgress)> = Vec::new();
    for (place, chart) in board.charts.iter().enumerate() {
        if was(chart) == ChartState::Pending && chart.state != ChartState::Pending {
            events.push((chart.started_ms.unwrap_or_default(), 1, place, chart));
        }
        if ended(chart.state) && !ended(was(chart)) {
            let at = chart.finished_ms.unwrap_or_default();
            events.push((at, 0, place, chart));
        }
    }
    events.sort_by_key(|&(at, kind, place, _)| (at, kind, place));
    for (_, kind, _, chart) in events {
        let what = if kind == 1 {
            "started".to_owned()
        } else {
            finished += 1;
            let took = took(chart).unwrap_or_default();
            if chart.state == ChartState::Done {
                format!("done in {took:.1}s")
            } else {
                format!("failed after {took:.1}s")
            }
        };
        let text = format!("group {}: chart {} {what}", chart.group, chart.chart);
        lines.push(line(
            seen.elapsed,
            seen.label,
            &text,
            Some((finished, total)),
        ));
    }
    if let Some(step) = step {
        lines.push(line(
            seen.elapsed,
            seen.label,
            step,
            Some((finished, total)),
        ));
    }
    lines
}

/// How long an ended chart took, in seconds.
fn took(chart: &ChartProgress) -> Option<f64> {
    let (start, end) = (chart.started_ms?, chart.finished_ms?);
    Some(end.saturating_sub(start) as f64 / 1000.0)
}

/// The terminal block: a bar with "N of M charts" and the elapsed time,
/// one row per chart (done, failed, running with its time, pending), and
/// the current step; each line at most `width - 1` columns.
pub(crate) fn block_lines(seen: &Seen<'_>, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let elapsed = seen.elapsed.as_secs_f64();
    match seen.board {
        Some(board) => {
            let total = board.charts.len();
            let done = board.finished();
            let filled = (done * BAR_CELLS).checked_div(total).unwrap_or(0);
            lines.push(format!(
                "{} [{}{}] {done} of {total} charts  {elapsed:.1}s",
                seen.label,
                "#".repeat(filled),
                "-".repeat(BAR_CELLS - filled)
            ));
            let name_width = board
                .charts
                .iter()
                .map(|c| c.chart.len())
                .max()
                .unwrap_or(0);
            let group_width = board
                .charts
                .iter()
                .map(|c| c.group.len())
                .max()
                .unwrap_or(0);
            for chart in &board.charts {
                let (mark, status) = match chart.state {
                    ChartState::Pending => ("·", "pending".to_owned()),
                    ChartState::Running => {
                        let running = chart
                            .started_ms
                            .map(|s| board.elapsed_ms.saturating_sub(s) as f64 / 1000.0)
                            .unwrap_or_default();
                        ("▸", format!("running {running:.1}s"))
                    }
                    ChartState::Done => {
                        ("✓", format!("done {:.1}s", took(chart).unwrap_or_default()))
                    }
                    ChartState::Failed => (
                        "✗",
                        format!("failed {:.1}s", took(chart).unwrap_or_default()),
                    ),
                };
                lines.push(format!(
                    "  {mark} {:<name_width$}  {:<group_width$}  {status}",
                    chart.chart, chart.group
                ));
            }
        }
        None => lines.push(format!("{} {elapsed:.1}s", seen.label)),
    }
    if let Some(step) = seen.step {
        lines.push(format!("  {step}"));
    }
    lines
        .iter()
        .map(|l| cut(l, width.saturating_sub(1)))
        .collect()
}

/// `line` cut to `columns` characters (a wrapped line would break the
/// redraw).
fn cut(line: &str, columns: usize) -> String {
    match line.char_indices().nth(columns) {
        Some((at, _)) => line[..at].to_owned(),
        None => line.to_owned(),
    }
}

/// The bytes that replace the `drawn` lines above the cursor with `lines`:
/// up to the first of them, each line cleared and written, and anything
/// left of a longer old block cleared.
pub(crate) fn redraw(drawn: usize, lines: &[String]) -> String {
    let mut out = String::new();
    if drawn > 0 {
        out.push_str(&format!("\x1b[{drawn}F"));
    }
    for line in lines {
        out.push_str("\x1b[2K");
        out.push_str(line);
        out.push('\n');
    }
    if drawn > lines.len() {
        out.push_str("\x1b[J");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(
        group: &str,
        name: &str,
        state: ChartState,
        at: (Option<u64>, Option<u64>),
    ) -> ChartProgress {
        ChartProgress {
            chart: name.into(),
            group: group.into(),
            state,
            started_ms: at.0,
            finished_ms: at.1,
        }
    }

    fn board(charts: Vec<ChartProgress>) -> OperationCharts {
        OperationCharts {
            operation: OperationId(3),
            elapsed_ms: 2_000,
            ended_ms: None,
            charts,
        }
    }

    fn seen<'a>(board: Option<&'a OperationCharts>, step: Option<&'a str>) -> Seen<'a> {
        Seen {
            elapsed: Duration::from_millis(1_500),
            label: "applying",
            step,
            board,
        }
    }

    use ChartState::{Done, Failed, Pending, Running};

    #[test]
    fn parallel_charts_each_get_a_start_and_an_end_line_in_one_poll() {
        let before = board(vec![
            chart("base", "db", Done, (Some(0), Some(300))),
            chart("services", "api", Pending, (None, None)),
            chart("services", "web", Pending, (None, None)),
            chart("services", "worker", Pending, (None, None)),
        ]);
        // Between two polls: all three started, web and api ended.
        let now = board(vec![
            chart("base", "db", Done, (Some(0), Some(300))),
            chart("services", "api", Done, (Some(310), Some(900))),
            chart("services", "web", Failed, (Some(311), Some(700))),
            chart("services", "worker", Running, (Some(312), None)),
        ]);
        let lines = plain_lines(
            Some(&before),
            &seen(Some(&now), Some("post-apply hook")),
            Some("post-apply hook"),
        );
        assert_eq!(
            lines,
            [
                "  [  1.5s] applying: group services: chart api started (1 of 4 charts)",
                "  [  1.5s] applying: group services: chart web started (1 of 4 charts)",
                "  [  1.5s] applying: group services: chart worker started (1 of 4 charts)",
                "  [  1.5s] applying: group services: chart web failed after 0.4s (2 of 4 charts)",
                "  [  1.5s] applying: group services: chart api done in 0.6s (3 of 4 charts)",
                "  [  1.5s] applying: post-apply hook (3 of 4 charts)",
            ]
        );
        // Nothing new: nothing printed.
        assert!(plain_lines(Some(&now), &seen(Some(&now), None), None).is_empty());
    }

    #[test]
    fn a_chart_that_ends_as_the_next_starts_is_shown_ending_first() {
        let before = board(vec![
            chart("base", "config", Running, (Some(0), None)),
            chart("base", "db", Pending, (None, None)),
        ]);
        let now = board(vec![
            chart("base", "config", Done, (Some(0), Some(300))),
            chart("base", "db", Running, (Some(300), None)),
        ]);
        let lines = plain_lines(Some(&before), &seen(Some(&now), None), None);
        assert_eq!(
            lines,
            [
                "  [  1.5s] applying: group base: chart config done in 0.3s (1 of 2 charts)",
                "  [  1.5s] applying: group base: chart db started (1 of 2 charts)",
            ]
        );
    }

    #[test]
    fn without_a_board_only_the_step_is_shown() {
        let lines = plain_lines(
            None,
            &seen(None, Some("loading plugins")),
            Some("loading plugins"),
        );
        assert_eq!(lines, ["  [  1.5s] applying: loading plugins"]);
    }

    #[test]
    fn the_terminal_block_has_a_bar_a_row_per_chart_and_the_step() {
        let now = board(vec![
            chart("base", "db", Done, (Some(0), Some(300))),
            chart("services", "api", Running, (Some(500), None)),
            chart("services", "web", Failed, (Some(500), Some(1_200))),
            chart("services", "worker", Pending, (None, None)),
        ]);
        let lines = block_lines(
            &seen(Some(&now), Some("group services: chart api: waiting")),
            80,
        );
        assert_eq!(
            lines,
            [
                "applying [##########----------] 2 of 4 charts  1.5s",
                "  ✓ db      base      done 0.3s",
                "  ▸ api     services  running 1.5s",
                "  ✗ web     services  failed 0.7s",
                "  · worker  services  pending",
                "  group services: chart api: waiting",
            ]
        );
        // Cut to the terminal's width (less one column), never wrapped.
        let narrow = block_lines(&seen(Some(&now), None), 21);
        assert!(narrow.iter().all(|l| l.chars().count() <= 20), "{narrow:?}");
        assert_eq!(narrow[0], "applying [##########");
    }

    #[test]
    fn a_redraw_goes_up_over_the_old_block_and_clears_what_is_left() {
        let lines = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(redraw(0, &lines), "\x1b[2Ka\n\x1b[2Kb\n");
        assert_eq!(redraw(2, &lines), "\x1b[2F\x1b[2Ka\n\x1b[2Kb\n");
        assert_eq!(redraw(3, &lines), "\x1b[3F\x1b[2Ka\n\x1b[2Kb\n\x1b[J");
    }

    #[test]
    fn a_view_ignores_another_operations_board_and_repeats_nothing() {
        let mut view = View::new(Style::Plain, OperationId(9));
        let other = board(vec![chart("base", "db", Running, (Some(0), None))]);
        let mut out = Vec::new();
        view.update(&mut out, seen(Some(&other), Some("loading plugins")))
            .unwrap();
        view.update(&mut out, seen(Some(&other), Some("loading plugins")))
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  [  1.5s] applying: loading plugins\n"
        );

        let mut view = View::new(Style::Terminal { width: 80 }, OperationId(3));
        let now = board(vec![chart("base", "db", Running, (Some(0), None))]);
        let mut out = Vec::new();
        view.update(&mut out, seen(Some(&now), None)).unwrap();
        view.update(&mut out, seen(Some(&now), None)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("\x1b[2Kapplying ["), "{text:?}");
        assert!(
            text.contains("\x1b[2F\x1b[2Kapplying ["),
            "the second draw replaces the first: {text:?}"
        );
    }
}
