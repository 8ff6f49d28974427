"""The simulator: every simulated numeric (hidden truths, noise, sensor readings), imported
only by tests, ``ros/sim_robot.py`` and ``ros/demo.py``."""
