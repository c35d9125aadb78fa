#!/usr/bin/env python3
"""metalflow launcher for sushy-tools' ``sushy-emulator`` (fake systems driver).

sushy-tools 2.2's fake systems driver only emulates power, boot device/mode,
virtual media and NICs.  It has no processors, memory or storage, so Ironic's
out-of-band ``redfish`` inspection would fail with
"Failed to discover the following properties: memory_mb, cpu_arch".

This launcher adds, without touching the installed package:

* ``get_total_memory`` / ``get_total_cpus`` / ``get_processors`` /
  ``get_simple_storage_collection`` on the fake driver, read from the extra
  keys ``memory_gb``, ``processors`` and ``disks`` of each entry of
  ``SUSHY_EMULATOR_FAKE_SYSTEMS`` (see scripts/sushy-fake-systems.json);
* ``SUSHY_EMULATOR_FAKE_POWER_DELAY = (min, max)``: seconds after which a
  power change lands (upstream: random 1-11 s);
* ``SUSHY_EMULATOR_STORAGE`` / ``SUSHY_EMULATOR_DRIVES`` /
  ``SUSHY_EMULATOR_VOLUMES`` derived from the same ``disks`` so that
  ``/Systems/<id>/Storage`` answers instead of failing with HTTP 500;
* BIOS settings (pending until the next boot) and a firmware inventory with
  ``SimpleUpdate`` tasks for the systems whose entry has ``bios`` /
  ``firmware`` (see sushy_firmware.py).

Static inventory (NICs, CPUs, memory, disks) is always read from the config
file, so editing sushy-fake-systems.json takes effect on restart; dynamic
state (power, boot device, virtual media) persists in
``SUSHY_EMULATOR_STATE_DIR``.

Usage: sushy_emulator.py --config FILE   (all sushy-emulator flags accepted)
"""

import random
import sys
import time

from sushy_tools import error
from sushy_tools.emulator import main as sushy_main
from sushy_tools.emulator.resources.systems import fakedriver

import sushy_firmware

STORAGE_ID = "1"


class InventoryFakeDriver(fakedriver.FakeDriver):
    """Fake driver with static hardware inventory taken from the config."""

    def _static(self, identity):
        uuid = self.uuid(identity)
        for system in self._config.get("SUSHY_EMULATOR_FAKE_SYSTEMS", []):
            if system.get("uuid") == uuid:
                return system
        # Systems created by an older config only live in the state dir.
        return self._get(uuid)

    def get_total_memory(self, identity):
        memory = self._static(identity).get("memory_gb")
        if not memory:
            raise error.NotSupportedError("memory_gb not configured")
        return int(memory)

    def _processor_spec(self, identity):
        spec = self._static(identity).get("processors")
        if not spec:
            raise error.NotSupportedError("processors not configured")
        return spec

    def get_total_cpus(self, identity):
        spec = self._processor_spec(identity)
        return int(spec.get("sockets", 1)) * int(spec.get("threads", 1))

    def get_processors(self, identity):
        spec = self._processor_spec(identity)
        return [
            {
                "id": f"CPU{socket}",
                "socket": f"CPU {socket}",
                "model": spec.get("model", "N/A"),
                "vendor": spec.get("vendor", "N/A"),
                "cores": str(spec.get("cores", 1)),
                "threads": str(spec.get("threads", 1)),
            }
            for socket in range(int(spec.get("sockets", 1)))
        ]

    def get_simple_storage_collection(self, identity):
        disks = self._static(identity).get("disks")
        if not disks:
            raise error.NotSupportedError("disks not configured")
        return {
            "sata": {
                "Id": "sata",
                "Name": "sata",
                "DeviceList": [
                    {"Name": d.get("name", d["id"]),
                     "CapacityBytes": int(d["capacity_bytes"])}
                    for d in disks
                ],
            }
        }

    def set_power_state(self, identity, state):
        """Upstream logic with a configurable delay.

        Upstream applies a power change 1-11 s (random) after the request;
        ``SUSHY_EMULATOR_FAKE_POWER_DELAY = (min, max)`` changes the range.
        """
        low, high = self._config.get("SUSHY_EMULATOR_FAKE_POWER_DELAY", (1, 11))
        apply_time = time.time() + random.uniform(float(low), float(high))
        system = self._get(identity)
        if "On" in state:
            pending_state = "On"
        elif state in ("ForceOff", "GracefulShutdown"):
            pending_state = "Off"
        elif "Restart" in state:
            system["power_state"] = "Off"
            pending_state = state
        else:
            raise error.NotSupportedError(f"Power state {state} is not supported")
        if system["power_state"] != pending_state:
            self._update(system, pending_power={
                "power_state": pending_state,
                "apply_time": apply_time,
            })

    def get_nics(self, identity):
        nics = self._static(identity).get("nics") or []
        return [{"id": nic.get("mac"), "mac": nic.get("mac")} for nic in nics]


class EmulatedDriver(sushy_firmware.BiosFirmwareMixin, InventoryFakeDriver):
    """The fake driver with inventory, BIOS and firmware."""


def _derive_storage(config):
    storage = dict(config.get("SUSHY_EMULATOR_STORAGE") or {})
    drives = dict(config.get("SUSHY_EMULATOR_DRIVES") or {})
    volumes = dict(config.get("SUSHY_EMULATOR_VOLUMES") or {})
    for system in config.get("SUSHY_EMULATOR_FAKE_SYSTEMS") or []:
        disks = system.get("disks")
        uuid = system.get("uuid")
        if not disks or not uuid or uuid in storage:
            continue
        storage[uuid] = [{
            "Id": STORAGE_ID,
            "Name": "Local Storage Controller",
            "StorageControllers": [
                {"MemberId": "0", "Name": "Integrated SATA Controller",
                 "SpeedGbps": 6},
            ],
            "Drives": [d["id"] for d in disks],
        }]
        drives[(uuid, STORAGE_ID)] = [
            {"Id": d["id"], "Name": d.get("name", d["id"]),
             "CapacityBytes": int(d["capacity_bytes"]),
             "Protocol": d.get("protocol", "SATA")}
            for d in disks
        ]
        volumes.setdefault((uuid, STORAGE_ID), [])
    config["SUSHY_EMULATOR_STORAGE"] = storage
    config["SUSHY_EMULATOR_DRIVES"] = drives
    config["SUSHY_EMULATOR_VOLUMES"] = volumes


_orig_configure = sushy_main.Application.configure


def _configure(self, config_file=None, extra_config=None):
    _orig_configure(self, config_file=config_file, extra_config=extra_config)
    _derive_storage(self.config)


def main():
    fakedriver.FakeDriver = EmulatedDriver
    sushy_main.Application.configure = _configure
    sushy_firmware.install(sushy_main.app)
    return sushy_main.main()


if __name__ == "__main__":
    sys.exit(main())
