#!/bin/sh
# chassis_control program for OpenIPMI's ipmi_sim: the BMC tests (test/bmc/support/ipmi-sim.ts)
# and the demo's simulator (scripts/ipmi-sim.sh).
#
# lan.conf names it as:  chassis_control "/bin/sh <this file> <state dir>"
# ipmi_sim then runs:    ... <state dir> get power|boot ...
#                        ... <state dir> set power 0|1 | boot <dev> | reset 1 | shutdown 1 | identify ...
# and reads "<parm>:<value>" lines back for `get`.
#
# State lives in files of the state dir, so tests can read what the BMC did:
#   power      0 or 1
#   boot       none | pxe | default | cdrom | bios (what ipmi_sim passes; "default" is disk)
#   calls.log  one line per call: "<epoch.ns> get|set <args>"
#   reset      one line per hard reset pulse
#   shutdown   one line per soft-off (ACPI) request
#   soft_delay optional: seconds after which a soft-off powers the host off,
#              or "ignore" for an OS that never shuts down (default 0)
dir=$1
op=$2
shift 2
# State files are replaced, never rewritten in place: a `get` running beside a
# `set` (the detached soft-off below) must not read a truncated, empty file.
put() { echo "$2" >"$dir/$1.$$" && mv -f "$dir/$1.$$" "$dir/$1"; }
echo "$(date +%s.%N) $op $*" >>"$dir/calls.log"
case $op in
  get)
    for p in "$@"; do
      case $p in
        power) echo "power:$(cat "$dir/power" 2>/dev/null || echo 0)" ;;
        boot) echo "boot:$(cat "$dir/boot" 2>/dev/null || echo default)" ;;
        *) echo "Invalid parameter: $p"; exit 1 ;;
      esac
    done
    ;;
  set)
    while [ $# -gt 0 ]; do
      p=$1
      v=$2
      shift 2
      case $p in
        power) put power "$v" ;;
        boot) put boot "$v" ;;
        reset) echo "$v" >>"$dir/reset" ;;
        shutdown)
          echo "$v" >>"$dir/shutdown"
          delay=$(cat "$dir/soft_delay" 2>/dev/null || echo 0)
          if [ "$delay" != ignore ]; then
            # detached: ipmi_sim waits for our output to end
            (sleep "$delay"; put power 0) </dev/null >/dev/null 2>&1 &
          fi
          ;;
        identify) shift ;;
        *) echo "Invalid parameter: $p"; exit 1 ;;
      esac
    done
    ;;
  *) echo "Unknown operation: $op"; exit 1 ;;
esac
exit 0
