"""Geometric calibration core (seed 000 §II.A-B, D; seed 002 §II.C). ROS-free."""
