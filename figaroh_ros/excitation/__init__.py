"""Optimal exciting motions for dynamic identification (Nguyen et al. 2023 Eq. 14, Tröbinger et al. §III),
from arrays: :func:`plan_trajectory` -> :class:`PlannedTrajectory` (``.t, .q, .dq, .ddq``,
``.condition_number``, ``.iterations``, ``.to_dict()``, ``.to_csv(path)``).  Names loaded
on first use (PEP 562): a planned trajectory read back does not load the planner (IPOPT)."""
from figaroh_ros.lazy import lazy_names

_PUBLIC = {
    "plan_trajectory": "figaroh_ros.excitation.design",
    "PlannedTrajectory": "figaroh_ros.excitation.planned",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)
