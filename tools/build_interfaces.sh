#!/usr/bin/env bash
# Generate and install the ROS 2 interfaces into the virtual environment (make setup).
#   [ROS_DISTRO=kilted|jazzy|humble] tools/build_interfaces.sh VENV
# - patches the include paths the ros-* wheels' CMake exports carry from their build host;
# - builds control_msgs and tf2_msgs from the definitions their releases ship in ROS_DISTRO
#   (default kilted; ros_interfaces/<package>/<distro>/, provenance in
#   test/data/interfaces/PROVENANCE.md), but only when no installed ROS provides them;
# - builds figaroh_ros's own msg/srv/action (the Python sources stay the editable install).
# Built with Ninja and through ccache when they are installed (make setup installs both): the
# cache (build/ccache) then holds the objects of figaroh_ros's generated C/C++, which the colcon
# build test (test/test_colcon.py) compiles again from the same generated files in its own
# workspace; each build's folder is ccache's base_dir, so a hit needs the same source text,
# flags and headers, and paths inside the build folder compare as relative paths.
set -euo pipefail
DISTRO=${ROS_DISTRO:-kilted}
case "$DISTRO" in
  humble|jazzy|kilted) ;;
  *) echo "error: unknown ROS_DISTRO '$DISTRO' (interface definitions exist for humble," \
          "jazzy, kilted)" >&2; exit 2 ;;
esac
VENV=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY="$VENV/bin/python"
BUILD="$ROOT/build/interfaces-$DISTRO"     # per distro: CMake caches never shared
INC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
NPINC=$("$PY" -c 'import numpy; print(numpy.get_include())')
for f in "$VENV"/share/*/cmake/*__rosidl_generator_pyExport*.cmake; do
  [ -f "$f" ] || continue
  sed -i -e "s#/opt/python/cp311-cp311/include/python3.11#$INC#g" \
         -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$NPINC#g" "$f"
done
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"
GENERATOR="Unix Makefiles"; command -v ninja >/dev/null && GENERATOR=Ninja
LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=)
if command -v ccache >/dev/null; then
  export CCACHE_DIR="$ROOT/build/ccache"      # test/test_colcon.py reads the same folder
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
build() {  # name source-dir extra-cmake-args...
  local name=$1 src=$2; shift 2
  # a build folder configured from another source folder (an earlier layout) or with another
  # generator starts afresh
  { grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$BUILD/$name/CMakeCache.txt" \
      && grep -qx "CMAKE_GENERATOR:INTERNAL=$GENERATOR" "$BUILD/$name/CMakeCache.txt"; } \
    2>/dev/null || rm -rf "${BUILD:?}/$name"
  mkdir -p "$BUILD/$name"
  cmake -G "$GENERATOR" -S "$src" -B "$BUILD/$name" -DCMAKE_INSTALL_PREFIX="$VENV" \
        -DCMAKE_INSTALL_RPATH="$VENV/lib" -DBUILD_TESTING=OFF "${LAUNCHER[@]}" \
        -DPython3_EXECUTABLE="$PY" -DPYTHON_EXECUTABLE="$PY" "$@" >"$BUILD/$name.log" 2>&1 \
    || { tail -30 "$BUILD/$name.log"; echo "cmake of $name failed (log: $BUILD/$name.log)"; exit 1; }
  CCACHE_BASEDIR="$BUILD/$name" cmake --build "$BUILD/$name" -j 2 >>"$BUILD/$name.log" 2>&1 \
    && cmake --install "$BUILD/$name" >>"$BUILD/$name.log" 2>&1 \
    || { tail -30 "$BUILD/$name.log"; echo "build of $name failed (log: $BUILD/$name.log)"; exit 1; }
  echo "interfaces: built $name"
}
have() {  # an installed interface package outside this venv's own build
  "$PY" - "$1" <<'PYEOF'
import sys
from importlib.util import find_spec
sys.exit(0 if find_spec(sys.argv[1]) is not None else 1)
PYEOF
}
stage() {  # package: its CMake skeleton plus the definitions of $DISTRO, in one folder
  local pkg=$1 src="$BUILD/src/$1"
  rm -rf "$src" && mkdir -p "$src"
  cp "$ROOT/ros_interfaces/$pkg/CMakeLists.txt" "$ROOT/ros_interfaces/$pkg/package.xml" "$src/"
  cp -r "$ROOT/ros_interfaces/$pkg/$DISTRO/." "$src/"
}
for pkg in control_msgs tf2_msgs; do
  if have "$pkg" && [ ! -f "$BUILD/$pkg.log" ]; then
    echo "interfaces: using the installed $pkg"
  else
    stage "$pkg"
    build "$pkg" "$BUILD/src/$pkg"
    echo "$DISTRO" > "$VENV/share/$pkg/ros_distro"   # the release these definitions follow
    echo "interfaces: $pkg has the $DISTRO definitions"
  fi
done
build figaroh_ros "$ROOT" -DFIGAROH_ROS_INSTALL_PYTHON=OFF
# The generated modules live in the venv's site-packages/figaroh_ros, the sources in this
# tree (editable install): whichever folder Python finds first also searches the other.
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cat > "$SITE/figaroh_ros/__init__.py" <<PYEOF
# Written by tools/build_interfaces.sh: generated ROS interfaces here, sources in the tree.
__path__.append("$ROOT/figaroh_ros")
exec(compile(open("$ROOT/figaroh_ros/__init__.py").read(), "$ROOT/figaroh_ros/__init__.py", "exec"))
PYEOF
