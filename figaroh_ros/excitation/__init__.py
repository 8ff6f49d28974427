"""Optimal exciting motions for dynamic identification (seed 000 Eq. 14, seed 003 §III),
from arrays: :func:`plan_trajectory` -> :class:`PlannedTrajectory` (``.t, .q, .dq, .ddq``,
``.condition_number``, ``.iterations``, ``.to_dict()``, ``.to_csv(path)``)."""
from figaroh_ros.excitation.design import plan_trajectory
from figaroh_ros.excitation.planned import PlannedTrajectory

__all__ = ["plan_trajectory", "PlannedTrajectory"]
