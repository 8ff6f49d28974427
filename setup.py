"""pip install of the ROS-free core; the version is package.xml's (the one place it is
written: colcon and rosdep read package.xml, pip reads it through this file)."""
import os
import xml.etree.ElementTree as ET

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))

setup(version=ET.parse(os.path.join(HERE, "package.xml")).getroot().findtext("version"))
