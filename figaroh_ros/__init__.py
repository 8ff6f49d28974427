"""figaroh_ros: on-robot geometric calibration and dynamic identification.

The generated ROS interfaces (``figaroh_ros.msg``, ``.srv``, ``.action``) may be installed
in another ``figaroh_ros`` folder than these sources (the development set-up keeps the
sources editable); extending the package path lets both halves import as one package.
"""
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
