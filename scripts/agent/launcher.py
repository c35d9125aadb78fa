#!/usr/bin/env python3
"""The "power supply" of the agent-path test hosts.

sushy-tools' fake systems driver PUTs a system's JSON to
``EXTERNAL_NOTIFICATION_URL`` whenever it changes (power, boot device,
virtual media) for systems with ``external_notifier: true``. This launcher
receives those notifications and keeps, for every host it knows, a real
ironic-python-agent running exactly while the host would be running the
agent ramdisk: powered on, booting from the virtual CD, with an ISO inserted.
It starts the agent with scripts/agent/ipa-host.sh, handing it the kernel
command line Ironic wrote into that ISO's GRUB configuration, and stops it
when the host powers off. A boot device changed to disk while the agent runs
does not stop it (a running machine keeps running its ramdisk): Ironic sets
it before asking the agent to power the host off after a deploy.

sushy applies a power change lazily, on the first read after its delay, so a
pending "On" is followed by a read of the system when it is due.

An ISO whose GRUB command line does not name Ironic's API (ipa-api-url) is
not the agent's ramdisk but a live ISO: the host runs that ISO's own system,
so nothing is started; a "booted-iso" event (with the ISO's volume id) says
the host booted it.

With --http-port it also serves Ironic's http_root (the ISOs Ironic
publishes for virtual media) over HTTP, as ironic-image's httpd does (the
demo leaves that to the stack's httpboot service).

Hosts are read from --hosts (JSON, re-read on every notification):
  {"<system uuid>": {"name": "h1", "mac": "52:54:00:..", "disks": "8G,8G",
                     "agentPort": 24501, "withholdBoots": 0}}
Every start and stop is appended to <state>/events.jsonl, and what each
notification of a known host said (power, boot device, the CD's image) to
<state>/systems.jsonl.

A host with "withholdBoots": N boots without an agent the first N times it is
powered on from the virtual CD, as a ramdisk that never comes up (a broken
ISO, a NIC the ramdisk lacks): Ironic then waits for a call-back that never
comes. Each such boot is a "withheld" event; the agent starts from the next.

With --fake-agent URL the hosts boot the fake agent (bench/support/fake-agent.ts,
one process for every host) instead of a real one: a start posts the host and
its kernel command line to URL/control/boot, a stop posts URL/control/halt.

Usage: launcher.py --listen-port P [--http-port P --http-root DIR] --hosts FILE
                   --state DIR --sushy-url URL --forward PORT[,PORT...]
                   [--fake-agent URL]
"""

import argparse
import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
import base64
from queue import Queue

import pycdlib

HERE = os.path.dirname(os.path.abspath(__file__))
IPA_HOST = os.path.join(HERE, "ipa-host.sh")


# Kernel parameters whose value is a credential (Ironic puts the agent token on a virtual media boot's command
# line): kept out of the event log, which is for reading; the agent gets them from its own cmdline file.
SECRET_PARAMS = re.compile(r"\b((?:ipa-agent-token|[\w.-]*(?:token|password|secret))=)\S*", re.IGNORECASE)


def redact_cmdline(cmdline):
    return SECRET_PARAMS.sub(r"\1<redacted>", cmdline)


def iso_boot(path):
    """What booting the ISO runs: (the kernel parameters of the first `linux` line of its grub.cfg, or None when
    it has no grub.cfg or no such line; its volume id)."""
    iso = pycdlib.PyCdlib()
    iso.open(path)
    try:
        volume = iso.pvd.volume_identifier.decode(errors="replace").strip()
        for name in ("/EFI/BOOT/grub.cfg", "/boot/grub/grub.cfg"):
            try:
                from io import BytesIO
                out = BytesIO()
                iso.get_file_from_iso_fp(out, rr_path=name)
                text = out.getvalue().decode()
                break
            except pycdlib.pycdlibexception.PyCdlibInvalidInput:
                continue
        else:
            return None, volume
    finally:
        iso.close()
    for line in text.splitlines():
        m = re.match(r"\s*(linux|linuxefi)\s+\S+\s*(.*)$", line)
        if m:
            return m.group(2).strip(), volume
    return None, volume


def size_bytes(size):
    """'8G' or '512M' as bytes."""
    m = re.fullmatch(r"(\d+)([MG])", size)
    if not m:
        raise ValueError(f"disk size must look like 8G or 512M, got {size}")
    return int(m.group(1)) * (2**30 if m.group(2) == "G" else 2**20)


def post_json(url, body):
    req = urllib.request.Request(url, method="POST", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()


class Launcher:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.running = {}  # uuid -> name
        self.timers = {}
        # Boots whose agent is withheld (hosts' "withholdBoots"): how many so far, and which host is in one now.
        self.withheld = {}
        self.holding = set()
        os.makedirs(args.state, exist_ok=True)
        self.events = open(os.path.join(args.state, "events.jsonl"), "a", buffering=1)
        self.systems = open(os.path.join(args.state, "systems.jsonl"), "a", buffering=1)

    def hosts(self):
        try:
            with open(self.args.hosts) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def event(self, **kw):
        kw["time"] = time.time()
        if "cmdline" in kw:
            kw["cmdline"] = redact_cmdline(kw["cmdline"])
        self.events.write(json.dumps(kw) + "\n")

    def sushy_request(self, path, body=None):
        auth = base64.b64encode(f"{self.args.sushy_user}:{self.args.sushy_password}".encode()).decode()
        req = urllib.request.Request(self.args.sushy_url + path, method="POST" if body else "GET",
                                     data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": f"Basic {auth}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()

    def notify(self, system):
        uuid = system.get("uuid")
        host = self.hosts().get(uuid)
        if not host:
            return
        pending = system.get("pending_power") or {}
        cd = (system.get("boot_image") or {}).get("Cd") or [None, False, False]
        # What sushy said, in its order: the BMC's side of every boot (power, boot device, the CD's image).
        self.systems.write(json.dumps({
            "host": host["name"], "time": time.time(), "power": system.get("power_state"),
            "pendingPower": pending.get("power_state"), "bootDevice": system.get("boot_device"),
            "cd": os.path.basename(cd[0]) if cd[0] else None, "cdInserted": bool(cd[2])}) + "\n")
        if pending.get("power_state") and uuid not in self.timers:
            # A read after the delay makes sushy apply the change (and notify).
            delay = max(0.0, float(pending.get("apply_time", 0)) - time.time()) + 0.2
            t = threading.Timer(delay, self.poke, args=(uuid,))
            self.timers[uuid] = t
            t.start()
        booting_cd = system.get("boot_device") == "Cd" and bool(cd[0]) and bool(cd[2])
        with self.lock:
            is_running = uuid in self.running
            want = system.get("power_state") == "On" and (is_running or booting_cd)
            if system.get("power_state") != "On":
                self.holding.discard(uuid)
            if want and not is_running and uuid in self.holding:
                pass  # this boot runs no agent: its ramdisk never comes up, or it is a live ISO
            elif want and not is_running and self.withheld.get(uuid, 0) < int(host.get("withholdBoots", 0)):
                self.withheld[uuid] = self.withheld.get(uuid, 0) + 1
                self.holding.add(uuid)
                self.event(host=host["name"], action="withheld", boot=self.withheld[uuid])
            elif want and not is_running:
                self.start(uuid, host, cd[0])
            elif not want and is_running:
                self.stop(uuid, host, reason=f"power {system.get('power_state')}, boot {system.get('boot_device')}")

    def poke(self, uuid):
        self.timers.pop(uuid, None)
        try:
            self.sushy_request(f"/redfish/v1/Systems/{uuid}")
        except Exception as exc:  # the next notification retries
            print(f"[launcher] reading system {uuid}: {exc}", file=sys.stderr)

    def start(self, uuid, host, iso_path):
        name = host["name"]
        try:
            cmdline, volume = iso_boot(iso_path)
        except Exception as exc:
            self.event(host=name, action="boot-failed", error=str(exc))
            return
        if not cmdline or "ipa-api-url=" not in cmdline:
            # Not the agent's ramdisk (Ironic's always names its API): a live ISO, whose own system the host
            # runs until it powers off. Nothing to start, and nothing again before the next boot.
            self.holding.add(uuid)
            self.event(host=name, action="booted-iso", volume=volume)
            return
        poweroff_url = f"{self.args.sushy_url}/redfish/v1/Systems/{uuid}/Actions/ComputerSystem.Reset"
        if self.args.fake_agent:
            try:
                post_json(self.args.fake_agent + "/control/boot", {
                    "name": name, "mac": host["mac"].lower(),
                    "disks": [size_bytes(s) for s in host.get("disks", "8G").split(",")],
                    "cmdline": cmdline, "poweroffUrl": poweroff_url})
            except Exception as exc:
                self.event(host=name, action="start-failed", error=str(exc))
                return
            self.running[uuid] = name
            self.event(host=name, action="started", cmdline=cmdline)
            return
        cmdfile = os.path.join(self.args.state, f"{name}.cmdline")
        with open(os.open(cmdfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(cmdline + "\n")
        cmd = ["bash", IPA_HOST, "start", name, "--mac", host["mac"].lower(),
               "--disks", host.get("disks", "8G"), "--cmdline", cmdfile,
               "--agent-port", str(host["agentPort"]), "--forward", self.args.forward,
               "--poweroff-url", poweroff_url]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            self.event(host=name, action="start-failed", error=r.stderr.strip()[-2000:])
            return
        self.running[uuid] = name
        self.event(host=name, action="started", cmdline=cmdline)

    def stop(self, uuid, host, reason):
        name = host["name"]
        if self.args.fake_agent:
            error = None
            try:
                post_json(self.args.fake_agent + "/control/halt", {"name": name})
            except Exception as exc:
                error = str(exc)
            self.running.pop(uuid, None)
            self.event(host=name, action="stopped", reason=reason, **({"error": error} if error else {}))
            return
        r = subprocess.run(["bash", IPA_HOST, "stop", name], capture_output=True, text=True)
        self.running.pop(uuid, None)
        self.event(host=name, action="stopped", reason=reason,
                   **({"error": r.stderr.strip()[-2000:]} if r.returncode else {}))

    def stop_all(self):
        with self.lock:
            hosts = self.hosts()
            for uuid in list(self.running):
                self.stop(uuid, hosts.get(uuid, {"name": self.running[uuid]}), reason="launcher exit")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen-port", type=int, required=True)
    p.add_argument("--http-port", type=int, help="serve --http-root on this port (omit when another server does)")
    p.add_argument("--http-root")
    p.add_argument("--hosts", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--sushy-url", required=True)
    p.add_argument("--sushy-user", default=os.environ.get("SUSHY_USERNAME", "admin"))
    p.add_argument("--sushy-password", default=os.environ.get("SUSHY_PASSWORD", "password"))
    p.add_argument("--forward", required=True)
    p.add_argument("--fake-agent", help="base URL of the fake agent: boot it instead of a real agent")
    args = p.parse_args()
    launcher = Launcher(args)

    class Notified(http.server.BaseHTTPRequestHandler):
        def do_PUT(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(204)
            self.end_headers()
            try:
                system = json.loads(body)
            except ValueError:
                return
            # Answer sushy first (it notifies from inside its request handler);
            # one worker keeps the notifications in their order.
            queue.put(system)

        def log_message(self, *a):
            pass

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    queue = Queue()

    def work():
        while True:
            system = queue.get()
            try:
                launcher.notify(system)
            except Exception as exc:
                print(f"[launcher] notification failed: {exc!r}", file=sys.stderr, flush=True)

    threading.Thread(target=work, daemon=True).start()
    notify_srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.listen_port), Notified)
    if args.http_port:
        if not args.http_root:
            p.error("--http-port needs --http-root")
        files_srv = http.server.ThreadingHTTPServer(
            ("127.0.0.1", args.http_port), functools.partial(Quiet, directory=args.http_root))
        threading.Thread(target=files_srv.serve_forever, daemon=True).start()
    import signal

    def bye(*_):
        threading.Thread(target=notify_srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, bye)
    print(f"[launcher] notifications on 127.0.0.1:{args.listen_port}"
          + (f", http_root on 127.0.0.1:{args.http_port}" if args.http_port else ""), flush=True)
    try:
        notify_srv.serve_forever()
    finally:
        launcher.stop_all()


if __name__ == "__main__":
    main()
