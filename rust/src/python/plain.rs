//! `Receiver.plain`: whether a `feed` brought only messages a run's mirror can pass by, so that
//! a parent draining many children does no Python work per event for a plain batch.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::own_run::RunMatch;
use crate::schema::{Direction, Fields};

/// The event types that change a run's mirrored state: a batch with one of them is not plain.
const STATE_TYPES: [&str; 6] = [
    "ready",
    "control-ack",
    "turn-started",
    "turn-complete",
    "result",
    "exit",
];

/// Which messages' `run` a plain batch may hold.
pub(super) enum RunCheck {
    /// No run (``run=None``): no batch is plain, and nothing is checked per message.
    Unset,
    /// This run only.
    Is(String),
    /// No run: a ``str`` that is not valid UTF-8 (lone surrogates) never equals a decoded run.
    Never,
}

impl RunCheck {
    /// From the ``run`` argument: ``None`` (no run) or a ``str``; anything else is a ``TypeError``.
    pub(super) fn new(run: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(run) = run else {
            return Ok(RunCheck::Unset);
        };
        match run.cast::<PyString>() {
            Ok(s) => Ok(match s.to_str() {
                Ok(text) => RunCheck::Is(text.to_owned()),
                Err(_) => RunCheck::Never,
            }),
            Err(_) => Err(PyTypeError::new_err("run must be a str or None")),
        }
    }

    /// What tells `scan_batch` a line of another run (`None`: no run, nothing is checked).
    pub(super) fn matcher(&self, direction: Option<Direction>) -> Option<RunMatch> {
        match self {
            RunCheck::Unset => None,
            RunCheck::Is(run) => Some(RunMatch::new(Some(run), direction)),
            RunCheck::Never => Some(RunMatch::new(None, direction)),
        }
    }

    /// An accepted message (its fields in `fields`) is plain: of this run, and of a type outside
    /// [`STATE_TYPES`].
    #[inline]
    pub(super) fn admits(&self, fields: &Fields) -> bool {
        let run_ok = match self {
            RunCheck::Unset => false,
            RunCheck::Is(run) => fields.run_text() == Some(run.as_str()),
            RunCheck::Never => false,
        };
        run_ok
            && match fields.type_text() {
                Some(t) => !STATE_TYPES.contains(&t),
                None => true,
            }
    }
}
