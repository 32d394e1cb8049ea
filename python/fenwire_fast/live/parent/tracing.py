"""Whether live runs are traced: ``trace=`` of ``Hub`` and ``spawn``, and ``FENWIRE_OTEL``.

Tracing is off unless asked for. ``trace=True`` (or a
:class:`~fenwire_fast.live.parent.otel.Telemetry`) turns it on and needs the ``otel`` extra
(``opentelemetry-api``): without it, :class:`TracingUnavailable` says which extra to install.
``trace=None`` (the default) follows the environment: ``FENWIRE_OTEL=1`` turns tracing on, and
without the extra it prints one warning on stderr and runs without tracing. ``trace=False`` is off
whatever the environment says. This module imports nothing of OpenTelemetry;
:mod:`~fenwire_fast.live.parent.otel` is loaded only when tracing is on.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .otel import Telemetry

__all__ = ["TracingUnavailable", "resolve", "OTEL_ENV", "EXTRA"]

#: the environment variable that turns tracing on when ``trace`` is not given
OTEL_ENV = "FENWIRE_OTEL"
#: the package extra tracing needs
EXTRA = "fenwire_fast[otel]"
_default: Telemetry | None = None
_warned = False


class TracingUnavailable(RuntimeError):
    """Tracing was asked for, but ``opentelemetry-api`` is not installed (the ``otel`` extra)."""


def _env_on() -> bool:
    return os.environ.get(OTEL_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def resolve(trace: Any) -> Telemetry | None:
    """The telemetry runs report to, or ``None`` when tracing is off (see the module docstring).

    ``trace``: ``None`` (follow ``FENWIRE_OTEL``), ``False``, ``True`` (the global providers) or a
    :class:`~fenwire_fast.live.parent.otel.Telemetry`. Raises :class:`TracingUnavailable` for ``True``
    without the extra, ``TypeError`` for anything else."""
    global _default, _warned
    if trace is False:
        return None
    if trace is None:
        if not _env_on():
            return None
        try:
            return resolve(True)
        except TracingUnavailable as exc:
            if not _warned:
                _warned = True
                print(f"fenwire: {OTEL_ENV} is set but {exc}; runs are not traced", file=sys.stderr)
            return None
    if trace is True:
        if _default is None:
            try:
                from .otel import Telemetry
            except ImportError as exc:
                raise TracingUnavailable(f"tracing needs opentelemetry-api: pip install '{EXTRA}' ({exc})") from None
            _default = Telemetry()
        return _default
    otel = sys.modules.get(f"{__package__}.otel")  # a Telemetry means it was imported
    if otel is not None and isinstance(trace, otel.Telemetry):
        return cast("Telemetry", trace)
    raise TypeError(f"trace must be True, False, None or a fenwire_fast.live.parent.otel.Telemetry, not {trace!r}")
