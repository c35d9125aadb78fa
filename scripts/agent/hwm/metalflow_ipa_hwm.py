"""Hardware manager for ironic-python-agent running as a metalflow test host.

The agent runs on the developer's machine, not on a ramdisk: its disks are
loop devices backed by sparse files. This manager claims the highest support
level, so every dispatched call reaches it first, and it subclasses the
generic manager, so the generic clean/deploy code calling
``self.list_block_devices`` only ever sees the loop devices named in
``METALFLOW_AGENT_DISKS`` (a comma-separated list of /dev/loopN paths, set by
scripts/agent/ipa-host.sh). Anything else is refused loudly rather than
skipped quietly, so a wrong setup fails instead of touching a real disk.
"""

import os
import re

from ironic_python_agent import errors
from ironic_python_agent import hardware
from ironic_python_agent import netutils

_LOOP = re.compile(r"^/dev/loop[0-9]+$")


def allowed_disks():
    raw = os.environ.get("METALFLOW_AGENT_DISKS", "")
    disks = [d.strip() for d in raw.split(",") if d.strip()]
    if not disks:
        raise errors.HardwareManagerNotFound(
            "METALFLOW_AGENT_DISKS is empty: refusing to run without an "
            "explicit list of loop devices")
    for d in disks:
        if not _LOOP.match(d):
            raise errors.HardwareManagerNotFound(
                f"METALFLOW_AGENT_DISKS names {d!r}; only /dev/loopN devices "
                "are accepted")
    return disks


def _is_allowed(name, disks):
    # Partitions of an allowed loop device are loopNpM.
    return any(name == d or re.match(re.escape(d) + r"p[0-9]+$", name)
               for d in disks)


def _host_nics():
    # The host's NIC is a veth, which has no /sys/class/net/X/device, so the
    # generic code would not count it as a network device at all.
    return [n for n in os.environ.get("METALFLOW_AGENT_NICS", "eth0").split(",")
            if n and os.path.exists(f"/sys/class/net/{n}")]


netutils.list_interfaces = _host_nics


def _backing_name(dev):
    try:
        with open(f"/sys/block/{os.path.basename(dev)}/loop/backing_file") as f:
            return os.path.splitext(os.path.basename(f.read().strip()))[0]
    except OSError:
        return None


class LoopDiskHardwareManager(hardware.GenericHardwareManager):
    HARDWARE_MANAGER_NAME = "metalflow_loop"
    HARDWARE_MANAGER_VERSION = "1"

    def evaluate_hardware_support(self):
        allowed_disks()
        return hardware.HardwareSupport.SERVICE_PROVIDER + 10

    def list_block_devices(self, include_partitions=False,
                           all_serial_and_wwn=False):
        disks = allowed_disks()
        types = ["loop", "part"] if include_partitions else ["loop"]
        found = hardware.list_all_block_devices(
            block_type=types, ignore_raid=True,
            all_serial_and_wwn=all_serial_and_wwn)
        result = []
        for dev in found:
            if not _is_allowed(dev.name, disks):
                continue
            # The generic code treats type "loop" like any disk once it is
            # listed; give it a stable model so hints can match on it.
            # A loop device's number changes from boot to boot; the serial
            # is the backing file's name (disk0, disk1, ...), which does not,
            # so root device hints can name it.
            dev.model = dev.model or "metalflow-loop"
            dev.serial = _backing_name(dev.name) or dev.serial
            result.append(dev)
        missing = [d for d in disks if d not in {r.name for r in result}]
        if missing:
            raise errors.BlockDeviceError(
                f"loop devices {missing} are not visible to the agent")
        return result
