#!/usr/bin/python3
"""A small IPMI BMC for tests: pyghmi's server-side Bmc (a real RMCP+ /
IPMI 2.0 implementation, Debian python3-pyghmi) that records the raw data of
every "Set System Boot Options" request it receives, one JSON line each.

ipmi_sim's chassis_control program only ever sees the boot device; the
boot-flags byte (valid, persistent, EFI) of parameter 5 is dropped on the way.
This peer shows what `ipmitool chassis bootdev ... options=efiboot,persistent`
really sent.

Usage: pyghmi-boot-recorder.py PORT RECORD_FILE   (admin / password, 127.0.0.1)
Run with Debian's /usr/bin/python3 (the one that sees python3-pyghmi).
"""
import json
import sys

import pyghmi.ipmi.bmc as bmc


class RecordingBmc(bmc.Bmc):
    def __init__(self, authdata, port, record):
        super().__init__(authdata, port=port, address="127.0.0.1")
        self.record = record
        self.powerstate = "off"
        self.bootdevice = "default"

    def get_boot_device(self):
        return self.bootdevice

    def set_boot_device(self, bootdevice):
        self.bootdevice = bootdevice

    def set_system_boot_options(self, request, session):
        with open(self.record, "a") as f:
            f.write(json.dumps({"data": list(request["data"])}) + "\n")
        return super().set_system_boot_options(request, session)

    def get_power_state(self):
        return self.powerstate

    def power_on(self):
        self.powerstate = "on"

    def power_off(self):
        self.powerstate = "off"

    def power_shutdown(self):
        self.powerstate = "off"

    def power_reset(self):
        pass

    def cold_reset(self):
        pass


def main():
    port, record = int(sys.argv[1]), sys.argv[2]
    RecordingBmc({"admin": "password"}, port, record).listen()


if __name__ == "__main__":
    sys.exit(main())
