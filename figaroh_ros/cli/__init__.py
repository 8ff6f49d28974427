"""Command line: ``figaroh-ros VERB ...`` (``figaroh_ros.cli.main``; one module per verb group)."""
