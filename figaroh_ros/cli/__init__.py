"""Command line: ``figaroh-ros VERB ...`` (see ``figaroh-ros --help``)."""
from figaroh_ros.cli.main import main

__all__ = ["main"]
