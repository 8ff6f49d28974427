"""Camera calibration: targets, detection in images, simulated images, the pixel
measurement model and its solver (ROS-free)."""
