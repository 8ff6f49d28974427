"""Optimal exciting motions for dynamic identification (seed 000 Eq. 14, seed 003 §III),
from arrays: :func:`plan_trajectory` -> :class:`PlannedTrajectory` (``.t, .q, .dq, .ddq``,
``.condition_number``, ``.iterations``, ``.to_dict()``, ``.to_csv(path)``).  Names loaded
on first use (PEP 562): a planned trajectory read back does not load the planner (IPOPT)."""
from importlib import import_module

_PUBLIC = {
    "plan_trajectory": "figaroh_ros.excitation.design",
    "PlannedTrajectory": "figaroh_ros.excitation.planned",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
