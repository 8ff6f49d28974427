"""Files in and out: configs' recordings, bags, results, plots.

The bag modules are loaded on first use (``figaroh_ros.io.bags``, ``bag_model``,
``bag_backend``: PEP 562, :mod:`figaroh_ros.lazy`): they import rosbags and mcap (~0.1 s),
which a task reading CSV files never needs, so a task reaches them through this package
when its input is a bag.
"""
from figaroh_ros.lazy import lazy_names

__getattr__, __dir__ = lazy_names(globals(), {}, ("bags", "bag_model", "bag_backend"))
