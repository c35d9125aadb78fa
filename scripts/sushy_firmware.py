"""BIOS settings and firmware updates for sushy-tools' fake systems.

sushy-tools 2.2 serves ``/Systems/<id>/BIOS`` (and its ``Settings``), an
``UpdateService`` with ``SimpleUpdate`` and a static task 42, but its fake
driver keeps no BIOS, its BIOS PATCH applies at once (no pending settings),
there is no ``FirmwareInventory`` and SimpleUpdate answers 204 without
fetching anything.  For the fake systems whose entry in
``SUSHY_EMULATOR_FAKE_SYSTEMS`` has ``bios`` (attributes) and/or
``firmware`` (``{"BIOS": version, "BMC": version}``) this module adds:

* BIOS: ``GET .../BIOS`` the current attributes; ``PATCH .../BIOS/Settings``
  stores pending ones (an attribute the BIOS lacks is a 400
  ``PropertyUnknown``); they replace the current ones when the system boots
  (a reset to On from Off, a restart, a power cycle), as a real BIOS does.
* Firmware: ``/UpdateService/FirmwareInventory`` with a ``<uuid>-BIOS`` and a
  ``<uuid>-BMC`` member per system (``RelatedItem`` the system or its
  manager); ``SimpleUpdate`` (``ImageURI`` http(s), ``Targets`` an inventory
  member, system or manager) answers 202 with a task monitor; the image is
  fetched in the background; the task completes with the component's version
  set to the image's content when that is a short version string (the minor
  number bumped otherwise), or ends in ``Exception`` with the fetch error.
  Each task records its ``StartTime`` and the request (``Payload``), and
  ``/redfish/v1/TaskService/Tasks`` lists them, as real BMCs keep them.

State lives in the fake driver's persistent state (``SUSHY_EMULATOR_STATE_DIR``).
"""

import copy
import datetime
import json
import re
import threading
import time

import flask
import requests

from sushy_tools import error

BOOTING = ("ForceRestart", "GracefulRestart", "PowerCycle")
VERSION_TEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,63}$")
MONITOR = "/redfish/v1/TaskService/TaskMonitors/"
TASKS = "/redfish/v1/TaskService/Tasks/"
INVENTORY = "/redfish/v1/UpdateService/FirmwareInventory"
UPDATE_ACTION = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def _error(status, message_id, message):
    body = {"error": {"code": message_id, "message": message,
                      "@Message.ExtendedInfo": [{"MessageId": message_id, "Message": message}]}}
    return flask.jsonify(body), status


class BiosFirmwareMixin:
    """Methods added to the fake driver (see sushy_emulator.py)."""

    def _bf_state(self, identity):
        """The system's BIOS/firmware state, initialised from the config once."""
        system = self._get(identity)
        static = self._static(identity)
        if "bf" not in system and ("bios" in static or "firmware" in static):
            self._update(system, bf={
                "bios": copy.deepcopy(static.get("bios")),
                "pending": {},
                "firmware": copy.deepcopy(static.get("firmware")),
                "tasks": {},
            })
        return system.get("bf")

    def _bf_save(self, identity, state):
        self._update(self._get(identity), bf=state)

    def get_bios(self, identity):
        state = self._bf_state(identity)
        if not state or state["bios"] is None:
            raise error.NotSupportedError("no bios configured for this fake system")
        return state["bios"]

    def get_bios_pending(self, identity):
        return dict(self.get_bios(identity), **self._bf_state(identity)["pending"])

    def set_bios(self, identity, attributes):
        """Pending until the next boot; unknown names refused as a whole."""
        state = self._bf_state(identity)
        if not state or state["bios"] is None:
            raise error.NotSupportedError("no bios configured for this fake system")
        unknown = sorted(set(attributes) - set(state["bios"]))
        if unknown:
            raise error.BadRequest(", ".join(unknown))
        state["pending"].update(attributes)
        self._bf_save(identity, state)

    def _apply_pending_bios(self, identity):
        state = self._bf_state(identity)
        if state and state["bios"] is not None and state["pending"]:
            state["bios"].update(state["pending"])
            state["pending"] = {}
            self._bf_save(identity, state)

    def get_versions(self, identity):
        state = self._bf_state(identity)
        if not state or not state.get("firmware"):
            raise error.NotSupportedError("no firmware configured for this fake system")
        return {"BiosVersion": state["firmware"].get("BIOS")}

    def set_power_state(self, identity, state):
        booting = state in BOOTING or ("On" in state and self.get_power_state(identity) == "Off")
        super().set_power_state(identity, state)
        if booting:
            self._apply_pending_bios(identity)


def _component_paths(uuid, firmware):
    return {name: f"{INVENTORY}/{uuid}-{name}" for name in sorted(firmware)}


def _member(uuid, name, version):
    related = f"/redfish/v1/Systems/{uuid}" if name == "BIOS" else f"/redfish/v1/Managers/{uuid}"
    return {
        "@odata.type": "#SoftwareInventory.v1_9_0.SoftwareInventory",
        "@odata.id": f"{INVENTORY}/{uuid}-{name}",
        "Id": f"{uuid}-{name}",
        "Name": f"{name} firmware",
        "Version": version,
        "Updateable": True,
        "Status": {"State": "Enabled", "Health": "OK"},
        "RelatedItem": [{"@odata.id": related}],
    }


def _systems_with_firmware(systems):
    for uuid in systems.systems:
        state = systems._bf_state(uuid)
        if state and state.get("firmware"):
            yield uuid, state


def _new_version(old, content):
    text = content.decode("utf-8", "replace").strip()
    if VERSION_TEXT.match(text):
        return text
    parts = (old or "1.0").split(".")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i].isdigit():
            parts[i] = str(int(parts[i]) + 1)
            break
    return ".".join(parts)


def _task_body(task_id, task):
    failed = task["state"] == "Exception"
    extra = {}
    if task.get("started"):
        extra["StartTime"] = task["started"]
    if task.get("payload") is not None:
        extra["Payload"] = {"HttpOperation": "POST", "TargetUri": UPDATE_ACTION,
                            "JsonBody": json.dumps(task["payload"], sort_keys=True)}
    return {
        **extra,
        "@odata.type": "#Task.v1_4_3.Task",
        "@odata.id": TASKS + task_id,
        "Id": task_id,
        "Name": f"SimpleUpdate {task['component']}",
        "TaskState": task["state"],
        "TaskStatus": "Critical" if failed else "OK",
        "TaskMonitor": MONITOR + task_id,
        "PercentComplete": 0 if task["state"] == "Running" else 100,
        "Messages": [{"MessageId": "Update.1.0.TransferFailed" if failed else "Update.1.0.UpdateSuccessful",
                      "Message": task["message"]}] if task.get("message") else [],
    }


def _run_update(systems, uuid, task_id, image_uri, component, delay):
    """The fetch and 'flash', off the request thread; the task ends here."""
    time.sleep(delay)
    try:
        res = requests.get(image_uri, timeout=30)
        res.raise_for_status()
        content = res.content[:4096]
        outcome = None
    except requests.RequestException as exc:
        outcome = f"Cannot download the firmware image: {exc.__class__.__name__}: " + (
            f"HTTP {exc.response.status_code}" if getattr(exc, "response", None) is not None else str(exc))
    state = systems._bf_state(uuid)
    task = state["tasks"][task_id]
    if outcome:
        task.update(state="Exception", message=outcome)
    else:
        old = state["firmware"].get(component)
        state["firmware"][component] = _new_version(old, content)
        task.update(state="Completed", message=f"{component} firmware updated from {old} to {state['firmware'][component]}")
    systems._bf_save(uuid, state)


def _resolve_target(systems, target):
    """A target (inventory member, system, manager) as (uuid, component)."""
    last = target.rstrip("/").rsplit("/", 1)[-1]
    for uuid, state in _systems_with_firmware(systems):
        for name, path in _component_paths(uuid, state["firmware"]).items():
            if target.rstrip("/") == path:
                return uuid, name
        if last == uuid and "/Systems/" in target:
            return uuid, "BIOS"
        if last == uuid and "/Managers/" in target:
            return uuid, "BMC"
    return None, None


def install(app):
    """Replaces and adds the routes above on sushy's Flask app."""

    def bios_settings(identity):
        systems = app.systems
        if flask.request.method == "GET":
            attributes = systems.get_bios_pending(identity)
            return app.render_template(
                "bios_settings.json", identity=identity,
                bios_pending_attributes=flask.json.dumps(attributes, sort_keys=True))
        attributes = (flask.request.get_json(silent=True) or {}).get("Attributes")
        if not isinstance(attributes, dict):
            return _error(400, "Base.1.0.PropertyMissing", "The request body needs Attributes (an object)")
        try:
            systems.set_bios(identity, attributes)
        except error.BadRequest as exc:
            return _error(400, "Base.1.0.PropertyUnknown", f"The BIOS has no attribute {exc.args[0]}")
        return "", 204

    def firmware_inventory():
        members = [{"@odata.id": path}
                   for uuid, state in _systems_with_firmware(app.systems)
                   for path in _component_paths(uuid, state["firmware"]).values()]
        return flask.jsonify({
            "@odata.type": "#SoftwareInventoryCollection.SoftwareInventoryCollection",
            "@odata.id": INVENTORY, "Name": "Firmware Inventory",
            "Members": members, "Members@odata.count": len(members)})

    def firmware_member(member):
        uuid, _, name = member.rpartition("-")
        for sys_uuid, state in _systems_with_firmware(app.systems):
            if sys_uuid == uuid and name in state["firmware"]:
                return flask.jsonify(_member(uuid, name, state["firmware"][name]))
        return _error(404, "Base.1.0.ResourceMissingAtURI", f"No firmware inventory member {member}")

    def simple_update():
        body = flask.request.get_json(silent=True) or {}
        image_uri = body.get("ImageURI")
        if not isinstance(image_uri, str) or not re.match(r"^https?://", image_uri):
            return _error(400, "Base.1.0.PropertyValueFormatError", "ImageURI must be an http or https URL")
        protocol = body.get("TransferProtocol")
        if protocol is not None and protocol not in ("HTTP", "HTTPS"):
            return _error(400, "Base.1.0.ActionParameterNotSupported", f"TransferProtocol {protocol} is not supported (HTTP, HTTPS)")
        targets = body.get("Targets") or []
        if len(targets) != 1:
            return _error(400, "Base.1.0.ActionParameterMissing", "Targets must name exactly one component of this emulator")
        uuid, component = _resolve_target(app.systems, targets[0])
        if not uuid:
            return _error(400, "Base.1.0.ActionParameterValueNotInList", f"Target {targets[0]} is no firmware component here")
        state = app.systems._bf_state(uuid)
        task_id = f"fw-{uuid[-4:]}-{len(state['tasks']) + 1}"
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        state["tasks"][task_id] = {"state": "Running", "component": component, "started": started, "payload": body}
        app.systems._bf_save(uuid, state)
        delay = float(app.config.get("SUSHY_EMULATOR_FAKE_UPDATE_DELAY", 1))
        threading.Thread(target=_run_update, args=(app.systems, uuid, task_id, image_uri, component, delay),
                         daemon=True).start()
        res = flask.jsonify(_task_body(task_id, state["tasks"][task_id]))
        return res, 202, {"Location": MONITOR + task_id}

    def task(task_id, monitor):
        for uuid, state in _systems_with_firmware(app.systems):
            found = state["tasks"].get(task_id)
            if found:
                running = found["state"] == "Running"
                headers = {"Location": MONITOR + task_id, "Retry-After": "1"} if monitor and running else {}
                return flask.jsonify(_task_body(task_id, found)), 202 if monitor and running else 200, headers
        return _error(404, "Base.1.0.ResourceMissingAtURI", f"No task {task_id}")

    def task_collection():
        members = [{"@odata.id": TASKS + task_id}
                   for _, state in _systems_with_firmware(app.systems)
                   for task_id in state["tasks"]]
        return flask.jsonify({
            "@odata.type": "#TaskCollection.TaskCollection",
            "@odata.id": TASKS.rstrip("/"), "Name": "Task Collection",
            "Members": members, "Members@odata.count": len(members)})

    root = app.view_functions["root_resource"]

    def root_with_tasks():
        """The service root links its TaskService, as real BMCs' do (sushy's template has none)."""
        res = root()
        body = json.loads(res.get_data(as_text=True))
        body.setdefault("Tasks", {"@odata.id": "/redfish/v1/TaskService"})
        res.set_data(json.dumps(body))
        return res

    app.view_functions["root_resource"] = root_with_tasks
    app.view_functions["bios_settings"] = _with_access(bios_settings)
    app.view_functions["UpdateService.update_service_simple_update"] = simple_update
    app.add_url_rule(INVENTORY, "bf_inventory", firmware_inventory, methods=["GET"])
    app.add_url_rule(INVENTORY + "/<member>", "bf_member", firmware_member, methods=["GET"])
    app.add_url_rule(MONITOR + "<task_id>", "bf_monitor", lambda task_id: task(task_id, True), methods=["GET"])
    app.add_url_rule(TASKS + "<task_id>", "bf_task", lambda task_id: task(task_id, False), methods=["GET"])
    app.add_url_rule(TASKS.rstrip("/"), "bf_tasks", task_collection, methods=["GET"])


def _with_access(view):
    from sushy_tools.emulator import api_utils
    return api_utils.ensure_instance_access(view)
