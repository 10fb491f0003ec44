//! Where each chart of a running operation stands: pending, running, done
//! or failed, with when it started and finished. Charts of a parallel
//! group run at once, so a single progress line cannot say this; the
//! board keeps every chart's state, and a client that polls
//! ([`crate::lifecycle::AppDetails::chart_progress`]) sees each start and
//! finish even when several happen between two polls.
//!
//! The board is in memory only: it describes the operation running now
//! (or the last one, until the app's next operation starts) and is gone
//! after a restart, as the operation is. Must not decide anything about
//! the operation.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::store::OperationId;

/// The charts of one operation, in the order they run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OperationCharts {
    /// The operation.
    pub operation: OperationId,
    /// Milliseconds since its charts were listed, when this was read (the
    /// clock of `started_ms` and `finished_ms`).
    #[serde(default)]
    pub elapsed_ms: u64,
    /// When the operation's work ended, on the same clock (kept to freeze
    /// `elapsed_ms`; not part of the answer).
    #[serde(skip)]
    pub ended_ms: Option<u64>,
    /// Every chart it applies (or removes), in order.
    pub charts: Vec<ChartProgress>,
}

impl OperationCharts {
    /// How many charts have ended (done or failed).
    pub fn finished(&self) -> usize {
        self.charts
            .iter()
            .filter(|c| matches!(c.state, ChartState::Done | ChartState::Failed))
            .count()
    }
}

/// One chart of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChartProgress {
    /// The chart.
    pub chart: String,
    /// Its chart group.
    pub group: String,
    /// Where it stands.
    pub state: ChartState,
    /// When it started, in milliseconds since the operation's charts were
    /// listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// When it ended, on the same clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<u64>,
}

/// Where one chart stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChartState {
    /// Not started yet.
    Pending,
    /// Being applied (or removed) now.
    Running,
    /// Applied (or removed).
    Done,
    /// Its apply (or removal) failed.
    Failed,
}

/// The boards of every app's latest operation.
#[derive(Default)]
pub(crate) struct ChartBoard {
    apps: Mutex<HashMap<String, (Instant, OperationCharts)>>,
}

impl ChartBoard {
    /// Starts the board of `app`'s operation `operation`: `charts` (group,
    /// chart) in order, all pending. Replaces the app's previous board.
    pub fn begin(&self, app: &str, operation: OperationId, charts: Vec<(String, String)>) {
        let charts = charts
            .into_iter()
            .map(|(group, chart)| ChartProgress {
                chart,
                group,
                state: ChartState::Pending,
                started_ms: None,
                finished_ms: None,
            })
            .collect();
        let board = OperationCharts {
            operation,
            elapsed_ms: 0,
            ended_ms: None,
            charts,
        };
        self.lock().insert(app.to_owned(), (Instant::now(), board));
    }

    /// Marks `chart` of `app`'s operation `operation` as running.
    pub fn started(&self, app: &str, operation: OperationId, chart: &str) {
        self.update(app, operation, chart, |c, at| {
            c.state = ChartState::Running;
            c.started_ms = Some(at);
        });
    }

    /// Marks `chart` as done (`ok`) or failed.
    pub fn finished(&self, app: &str, operation: OperationId, chart: &str, ok: bool) {
        self.update(app, operation, chart, |c, at| {
            c.state = if ok {
                ChartState::Done
            } else {
                ChartState::Failed
            };
            c.started_ms.get_or_insert(at);
            c.finished_ms = Some(at);
        });
    }

    /// Stops the clock of `app`'s operation `operation`: its work ended,
    /// so `elapsed_ms` stays what it was then.
    pub fn end(&self, app: &str, operation: OperationId) {
        if let Some((began, board)) = self.lock().get_mut(app)
            && board.operation == operation
            && board.ended_ms.is_none()
        {
            board.ended_ms = Some(millis_since(*began));
        }
    }

    /// The app's latest board, if any: `elapsed_ms` is the time since its
    /// charts were listed, or until the operation ended.
    pub fn get(&self, app: &str) -> Option<OperationCharts> {
        self.lock().get(app).map(|(began, board)| {
            let mut board = board.clone();
            board.elapsed_ms = board.ended_ms.unwrap_or_else(|| millis_since(*began));
            board
        })
    }

    /// Forgets the app (it was deleted).
    pub fn forget(&self, app: &str) {
        self.lock().remove(app);
    }

    fn update(
        &self,
        app: &str,
        operation: OperationId,
        chart: &str,
        change: impl FnOnce(&mut ChartProgress, u64),
    ) {
        let mut apps = self.lock();
        let Some((began, board)) = apps.get_mut(app) else {
            return;
        };
        if board.operation != operation {
            return;
        }
        let at = millis_since(*began);
        if let Some(c) = board.charts.iter_mut().find(|c| c.chart == chart) {
            change(c, at);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, OperationCharts)>> {
        self.apps.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A chart running on the board: started when made, marked done by
/// [`ChartRun::done`], failed when dropped without it (an error, an abort,
/// a panic).
pub(crate) struct ChartRun<'b> {
    board: &'b ChartBoard,
    app: &'b str,
    operation: OperationId,
    chart: &'b str,
    ok: bool,
}

impl<'b> ChartRun<'b> {
    /// Marks `chart` running.
    pub fn start(
        board: &'b ChartBoard,
        app: &'b str,
        operation: OperationId,
        chart: &'b str,
    ) -> Self {
        board.started(app, operation, chart);
        ChartRun {
            board,
            app,
            operation,
            chart,
            ok: false,
        }
    }

    /// Marks the chart done.
    pub fn done(mut self) {
        self.ok = true;
    }
}

impl Drop for ChartRun<'_> {
    fn drop(&mut self) {
        self.board
            .finished(self.app, self.operation, self.chart, self.ok);
    }
}

fn millis_since(began: Instant) -> u64 {
    u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chart_is_pending_then_running_then_done_or_failed() {
        let board = ChartBoard::default();
        let op = OperationId(7);
        board.begin(
            "shop",
            op,
            vec![
                ("base".into(), "db".into()),
                ("services".into(), "api".into()),
                ("services".into(), "web".into()),
            ],
        );
        board.started("shop", op, "api");
        board.started("shop", op, "web");
        board.finished("shop", op, "web", false);
        // Another operation's news does not touch this board.
        board.finished("shop", OperationId(8), "api", true);
        let seen = board.get("shop").unwrap();
        let states: Vec<_> = seen.charts.iter().map(|c| c.state).collect();
        assert_eq!(
            states,
            [ChartState::Pending, ChartState::Running, ChartState::Failed]
        );
        assert_eq!(seen.finished(), 1);
        assert!(seen.charts[2].finished_ms.is_some());
        assert!(seen.charts[0].started_ms.is_none());
        // The guard: done, or failed when dropped early.
        board.begin(
            "shop",
            op,
            vec![("base".into(), "db".into()), ("base".into(), "api".into())],
        );
        ChartRun::start(&board, "shop", op, "db").done();
        drop(ChartRun::start(&board, "shop", op, "api"));
        let seen = board.get("shop").unwrap();
        assert_eq!(seen.charts[0].state, ChartState::Done);
        assert_eq!(seen.charts[1].state, ChartState::Failed);
        board.forget("shop");
        assert!(board.get("shop").is_none());
    }

    #[test]
    fn the_clock_stops_when_the_operation_ends() {
        let board = ChartBoard::default();
        let op = OperationId(7);
        board.begin("shop", op, vec![("base".into(), "db".into())]);
        // Another operation's end does not stop this one's clock.
        board.end("shop", OperationId(8));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(board.get("shop").unwrap().elapsed_ms >= 20);
        board.end("shop", op);
        let ended = board.get("shop").unwrap().elapsed_ms;
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(board.get("shop").unwrap().elapsed_ms, ended);
    }
}
