"""ROS 2 nodes: thin layers (parameters, topics, actions, conversions) over the core."""
