"""``docs/reference/nodes.md``: per node executable of ``figaroh_ros``
(``figaroh_ros.cli.launch_runner.OUR_EXECUTABLES``), every ROS parameter with its type,
default, range and description, and the topics, services and actions of the node.

The parameters come from the pydantic model the node declares
(``figaroh_ros.ros.parameters.declare``); the topics, services and actions from the ROS
graph: the node is started in this process, with the parameters the first launch file
starting it gives, and its own entities (and those of its hidden helper nodes) are read
back with rclpy's graph API.  Discovery is kept inside this process
(``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF``, an unused namespace), so other ROS graphs on the
machine do not show.  A node that no launch file starts is described from its module's
source instead: its ``create_publisher`` / ``create_subscription`` / ``create_service`` /
``ActionServer`` calls with the names they give."""
from __future__ import annotations

import ast
import glob
import importlib
import inspect
import os
import sys
import tempfile
import time

import yaml

from tools.docs.cli import rst_to_markdown
from tools.docs.markdown import anchor, cell, note, table

NAMESPACE = "/figaroh_docs"          # nobody else's: names are shown relative to it
# every node has them: listed once on the page, not per node
STANDARD_TOPICS = {"/rosout", "/parameter_events"}
STANDARD_SERVICES = ("describe_parameters", "get_parameter_types", "get_parameters",
                     "list_parameters", "set_parameters", "set_parameters_atomically",
                     "get_type_description")
STANDARD_PARAMETERS = {"use_sim_time", "start_type_description_service"}


# ------------------------------------------------------------------ parameters
def _range(field) -> str:
    parts = []
    for m in field.metadata:
        for key, op in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            value = getattr(m, key, None)
            if value is not None:
                parts.append(f"{op} {value:g}" if isinstance(value, float) else
                             f"{op} {value}")
        if getattr(m, "min_length", None):
            parts.append(f"length ≥ {m.min_length}")
        if getattr(m, "max_length", None):
            parts.append(f"length ≤ {m.max_length}")
        if getattr(m, "pattern", None):
            options = m.pattern.strip("^$").strip("()")
            parts.append(" \\| ".join(f"`{o}`" for o in options.split("|")))
    return ", ".join(parts)


def _type(annotation) -> str:
    text = {bool: "bool", int: "integer", float: "double", str: "string"}.get(annotation)
    if text:
        return text
    origin = getattr(annotation, "__origin__", None)
    if origin is list:
        return f"{_type(annotation.__args__[0])} array"
    if getattr(annotation, "__metadata__", None):       # Annotated[str, validator]
        base = _type(annotation.__origin__)
        fn = annotation.__metadata__[0]
        what = getattr(getattr(fn, "func", None), "__name__", "")
        return f"{base} ({what.strip('_').replace('_', ' ')})" if what else base
    return str(annotation)


def _default(value) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, list):
        return "<br>".join(f"`{v}`" for v in value) or "`[]`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def model_rows(model) -> list[list[str]]:
    return [[f"`{name}`", _type(f.annotation), _default(f.default), _range(f),
             cell(f.description or "")] for name, f in model.model_fields.items()]


def _ros_type(value) -> str:
    return {bool: "bool", int: "integer", float: "double", str: "string"}.get(
        type(value), type(value).__name__)


# ------------------------------------------------------------------ graph
def _launched(root: str) -> dict[str, tuple[str, dict]]:
    """exec -> (launch file relative to ``root``, node entry) of the first launch file
    starting it: the simulated robots' first (they need no robot), by name."""
    from figaroh_ros.cli.launch_file import read_launch

    found = {}
    paths = sorted(glob.glob(os.path.join(root, "launch", "*.launch.yaml")),
                   key=lambda p: (not os.path.basename(p).startswith("sim_"), p))
    for path in paths:
        for node in read_launch(path, {}):
            if node["pkg"] == "figaroh_ros":
                found.setdefault(node["exec"], (os.path.relpath(path, root), node))
    return found


def _node_class(module):
    from rclpy.node import Node

    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, Node) and c.__module__ == module.__name__]
    return classes[0] if len(classes) == 1 else None


def _shown(name: str, node_name: str) -> str:
    """A graph name as the node's code gives it: relative to its namespace, ``~/`` for
    its private names, absolute otherwise."""
    private = f"{NAMESPACE}/{node_name}/"
    if name.startswith(private):
        return "~/" + name[len(private):]
    if name.startswith(NAMESPACE + "/"):
        return name[len(NAMESPACE) + 1:]
    return name


def _entities(node, names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """The publishers, subscriptions, services, clients, action servers and clients of
    the nodes ``names`` (in ``NAMESPACE``), as (shown name, type), sorted."""
    from rclpy.action import graph

    out = {k: set() for k in ("publishes", "subscribes", "services", "clients",
                              "action servers", "action clients")}
    by_node = {"publishes": node.get_publisher_names_and_types_by_node,
               "subscribes": node.get_subscriber_names_and_types_by_node,
               "services": node.get_service_names_and_types_by_node,
               "clients": node.get_client_names_and_types_by_node}
    for name in names:
        for key, call in by_node.items():
            for topic, types in call(name, NAMESPACE):
                if topic in STANDARD_TOPICS or "/_action/" in topic:
                    continue
                if key in ("services", "clients") and \
                        topic.rsplit("/", 1)[-1] in STANDARD_SERVICES and \
                        topic.startswith(f"{NAMESPACE}/{name}/"):
                    continue
                out[key].add((_shown(topic, names[0]), ", ".join(types)))
        for key, call in (("action servers", graph.get_action_server_names_and_types_by_node),
                          ("action clients", graph.get_action_client_names_and_types_by_node)):
            for action, types in call(node, name, NAMESPACE):
                out[key].add((_shown(action, names[0]), ", ".join(types)))
    return {k: sorted(v) for k, v in out.items()}


def _settled(node, names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """:func:`_entities` once two reads 0.1 s apart agree (the graph cache learns of the
    node's own entities through the middleware, not always at once)."""
    seen = _entities(node, names)
    for _ in range(50):
        time.sleep(0.1)
        now = _entities(node, names)
        if now == seen:
            return now
        seen = now
    raise SystemExit(f"the ROS graph of {names[0]} does not settle")


def _parameters_of(node, model) -> list[list[str]]:
    """Rows of the parameters ``node`` declared outside its model."""
    rows = []
    known = set(model.model_fields) if model else set()
    for name in sorted(node._parameters):
        if name in known or name in STANDARD_PARAMETERS:
            continue
        value = node.get_parameter(name).value
        d = node.describe_parameter(name)
        shown = "(set at start)" if isinstance(value, str) and (
            len(value) > 60 or "\n" in value) else _default(value)
        rows.append([f"`{name}`", _ros_type(value), shown, "",
                     cell(d.description) + ("" if d.read_only else
                                            " (settable while the node runs)")])
    return rows


def introspect(root: str, executables: dict[str, str]) -> dict[str, dict]:
    """exec -> {"model", "class", "launch", "entities", "extra"} of every executable a
    launch file starts; the others -> {"model", "class"} only."""
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "OFF"
    os.environ.pop("ROS_STATIC_PEERS", None)
    import rclpy

    from figaroh_ros.ros import parameters

    declared = {}
    original = parameters.declare

    def recording(node, model):
        declared[node.get_name()] = model
        return original(node, model)

    parameters.declare = recording
    modules = {exe: importlib.import_module(m) for exe, m in executables.items()}
    for module in modules.values():
        if getattr(module, "declare", None) is original:
            module.declare = recording
    launched = _launched(root)
    given = {}
    for exe, (_, entry) in launched.items():
        name = entry.get("name") or exe
        given[f"{NAMESPACE}/{name}"] = {"ros__parameters": dict(
            entry["param"], lock_memory=False)}
    info = {exe: {"class": _node_class(m), "module": m} for exe, m in modules.items()}
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)                   # whatever the nodes create at start lands here
        with open("parameters.yaml", "w") as f:
            yaml.safe_dump(given, f)
        rclpy.init(args=["--ros-args", "-r", f"__ns:={NAMESPACE}", "--log-level", "error",
                         "--params-file", os.path.join(work, "parameters.yaml")])
        try:
            for exe in executables:
                if exe not in launched or info[exe]["class"] is None:
                    continue
                try:
                    node = info[exe]["class"]()
                except Exception as exc:         # described from its source instead
                    print(f"gen_docs: {exe} as {launched[exe][0]} starts it did not start "
                          f"({type(exc).__name__}: {exc}): its topics are read from its "
                          "source", file=sys.stderr)
                    continue
                try:
                    name = node.get_name()
                    helpers = [n for n, ns in node.get_node_names_and_namespaces()
                               if ns == NAMESPACE and n.startswith(f"_{name}_")]
                    info[exe].update(launch=launched[exe][0], name=name,
                                     model=declared.get(name),
                                     entities=_settled(node, [name] + sorted(helpers)),
                                     extra=_parameters_of(node, declared.get(name)))
                finally:
                    node.destroy_node()
        finally:
            rclpy.try_shutdown()
            os.chdir(here)
            parameters.declare = original
    return info


# ------------------------------------------------------------------ source
CREATORS = {"create_publisher": ("publishes", 0, 1), "create_subscription": ("subscribes", 0, 1),
            "create_service": ("services", 0, 1), "create_client": ("clients", 0, 1),
            "ActionServer": ("action servers", 1, 2), "ActionClient": ("action clients", 1, 2)}


def from_source(module) -> dict[str, list[tuple[str, str]]]:
    """The entities a module's source creates with literal names (an f-string over a
    module-level tuple expanded), for a node that no launch file starts."""
    tree = ast.parse(inspect.getsource(module))
    constants = {t.id: ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name) and _literal(n.value)}
    loops = {}
    for n in ast.walk(tree):
        if isinstance(n, (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            for g in n.generators:
                if isinstance(g.target, ast.Name) and isinstance(g.iter, ast.Name) \
                        and g.iter.id in constants:
                    for inner in ast.walk(n):
                        loops[id(inner)] = (g.target.id, constants[g.iter.id])
    out = {k: set() for k in ("publishes", "subscribes", "services", "clients",
                              "action servers", "action clients")}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        fn = n.func.attr if isinstance(n.func, ast.Attribute) else \
            n.func.id if isinstance(n.func, ast.Name) else None
        if fn not in CREATORS or len(n.args) <= CREATORS[fn][2]:
            continue
        key, t, s = CREATORS[fn]
        kind = _interface_name(module, ast.unparse(n.args[t]))
        for name in _names(n.args[s], loops.get(id(n))):
            out[key].add((name, kind))
    return {k: sorted(v) for k, v in out.items()}


def _interface_name(module, expr: str) -> str:
    """``pkg/msg/Type`` of the class a module names ``expr`` (``Bool``), else ``expr``."""
    obj = getattr(module, expr, None)
    parts = getattr(obj, "__module__", "").split(".")
    if len(parts) >= 2 and parts[1] in ("msg", "srv", "action"):
        return f"{parts[0]}/{parts[1]}/{obj.__name__}"
    return expr


def _literal(node) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except ValueError:
        return False


def _names(arg, loop) -> list[str]:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.JoinedStr) and loop is not None:
        var, values = loop
        out = []
        for value in values:
            text = ""
            for part in arg.values:
                if isinstance(part, ast.Constant):
                    text += part.value
                elif isinstance(part.value, ast.Name) and part.value.id == var:
                    text += str(value)
                else:
                    return [ast.unparse(arg)]
            out.append(text)
        return out
    return [f"(from `{ast.unparse(arg)}`)"]


# ------------------------------------------------------------------ page
def _entity_table(entities: dict[str, list[tuple[str, str]]], types_of) -> list[str]:
    rows = [[key, f"`{name}`" if not name.startswith("(") else name, types_of(kind)]
            for key, items in entities.items() for name, kind in items]
    if not rows:
        return ["(none)", ""]
    return table(["role", "name", "type"], rows) + [""]


def _type_link(kind: str) -> str:
    """``figaroh_ros/action/Calibrate`` linked to its interface reference section."""
    out = []
    for t in kind.split(", "):
        if t.startswith("figaroh_ros/"):
            out.append(f"[`{t}`](interfaces.md#{anchor(t)})")
        else:
            out.append(f"`{t}`")
    return ", ".join(out)


def render(root: str) -> str:
    from figaroh_ros.cli.launch_runner import OUR_EXECUTABLES

    executables = dict(sorted(OUR_EXECUTABLES.items()))
    info = introspect(root, executables)
    out = [note("the parameter models (`figaroh_ros/ros/parameters.py` and the nodes) "
                "and the ROS graph of each node started by a launch file"),
           "# Node reference", "",
           "Every node executable of `figaroh_ros` (`ros2 run figaroh_ros EXEC`; here "
           "`python -m figaroh_ros.ros.MODULE`): its ROS parameters with type, default, "
           "range and description, and the topics, services and actions it offers or "
           "uses. Names are as the node gives them: relative names (`joint_states`) "
           "follow the node's namespace and remappings, `~/` names are under the node's "
           "name, absolute names (`/tf`) stay. Every node also has the standard "
           "parameter services, `/rosout`, `/parameter_events` and the parameter "
           "`use_sim_time`, not listed. The interface types of the package are in the "
           "[interface reference](interfaces.md).", ""]
    out += [f"- [`{exe}`](#{anchor(exe)}): `{m}`" for exe, m in executables.items()]
    out.append("")
    for exe, module_name in executables.items():
        i = info[exe]
        module = i["module"]
        doc = (inspect.getdoc(module) or "").split("\n\n")[0]
        out += [f"## {exe}", "", f"Module `{module_name}`" +
                (f", node name `{i['name']}`." if "name" in i else "."), ""]
        if doc:
            out += [cell(rst_to_markdown(doc)), ""]
        model = i.get("model") or _model_in(module)
        rows = (model_rows(model) if model else []) + i.get("extra", [])
        out += ["### Parameters", ""]
        if model is not None:
            out += [f"Declared from `{model.__module__}.{model.__name__}`; read once at "
                    "start (read-only) unless marked settable.", ""]
        out += (table(["parameter", "type", "default", "range / options", "description"],
                      rows) if rows else ["(none)"]) + [""]
        out += ["### Topics, services and actions", ""]
        if "entities" in i:
            out += [f"Read from the ROS graph of the node as `{i['launch']}` starts it "
                    "(an idle node: what depends on its config, such as controllers "
                    "and recorded topics, is that launch file's).", ""]
            out += _entity_table(i["entities"], _type_link)
        else:
            out += ["Read from the node's source (no launch file starts it).", ""]
            out += _entity_table(from_source(module), _type_link)
    return "\n".join(out).rstrip("\n") + "\n"


def _model_in(module):
    from figaroh_ros.ros.parameters import Parameters

    found = [c for _, c in inspect.getmembers(module, inspect.isclass)
             if issubclass(c, Parameters) and c is not Parameters]
    return found[0] if len(found) == 1 else None
