# What scripts/stack.sh runs for each service: the config files written on
# every start (Ironic's ironic.conf and database schema, sushy's Flask config
# and htpasswd), Temporal's search attributes (scripts/search-attributes.txt)
# and the command line of each (command_of sets CMD). Sourced by
# scripts/stack.sh, not run: it uses the script's settings and log/die, and
# temporal_cli of scripts/lib/stack-health.sh.

prepare_temporal() { :; }

search_attribute_args() {
  [[ -f "$SEARCH_ATTRIBUTES_FILE" ]] || die "temporal: missing $SEARCH_ATTRIBUTES_FILE"
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"; line="${line//[[:space:]]/}"
    [[ -n "$line" ]] || continue
    [[ "$line" =~ ^[A-Za-z_][A-Za-z0-9_]*=(Text|Keyword|Int|Double|Bool|Datetime|KeywordList)$ ]] \
      || die "temporal: bad line '$line' in $SEARCH_ATTRIBUTES_FILE (want NAME=Type)"
    printf '%s\n' --search-attribute "$line"
  done <"$SEARCH_ATTRIBUTES_FILE"
}

# `start-dev --search-attribute` registers attributes only when it creates the
# database; with an existing temporal.db new lines of search-attributes.txt
# are silently ignored. Register missing ones and refuse type changes.
ensure_search_attributes() {
  local port="$1" listing missing line name type want have
  listing="$(temporal_cli operator search-attribute list --address "$HOST:$port" --namespace default -o json)" \
    || die "temporal: could not list search attributes"
  missing=()
  while IFS= read -r line; do
    [[ "$line" == --search-attribute ]] && continue
    name="${line%%=*}"; type="${line#*=}"
    want="$(printf '%s' "$type" | sed -E 's/([a-z])([A-Z])/\1_\2/g' | tr '[:lower:]' '[:upper:]')"
    have="$("$VENV/bin/python" -c 'import json,sys; print(json.loads(sys.argv[1]).get("customAttributes", {}).get(sys.argv[2], ""))' "$listing" "$name")"
    if [[ -z "$have" ]]; then
      missing+=("$name=$type")
    elif [[ "$have" != "INDEXED_VALUE_TYPE_$want" ]]; then
      die "temporal: search attribute $name is registered as ${have#INDEXED_VALUE_TYPE_} in $STATE/temporal.db but $SEARCH_ATTRIBUTES_FILE says $type; types cannot change (stop the stack and delete $STATE/temporal.db to start over)"
    fi
  done < <(search_attribute_args)
  for line in "${missing[@]}"; do
    log "temporal: registering search attribute $line (not in the existing database)"
    temporal_cli operator search-attribute create --address "$HOST:$port" --namespace default \
      --name "${line%%=*}" --type "${line#*=}" >/dev/null || die "temporal: could not register search attribute $line"
  done
}

# The agent path (redfish-virtual-media boot of ironic-python-agent, direct
# deploy, agent inspection), set as Metal3's ironic-image sets it, only when
# IRONIC_AGENT_PATH=1 (the agent launcher, scripts/agent/launcher.py, then
# serves http_root on IRONIC_HTTP_PORT). Nothing here changes what
# fake-hardware nodes do: their interfaces stay the defaults.
agent_path() { [[ "${IRONIC_AGENT_PATH:-}" == 1 ]]; }

agent_deploy_settings() {
  agent_path || return 0
  cat <<EOF
# Put on the virtual-media ISO's kernel command line as ipa-api-url.
external_callback_url = $(scheme_of ironic)://$HOST:$IRONIC_PORT
# Metal3 skips the full (shred) erase and keeps the metadata erase.
erase_devices_priority = 0
erase_devices_metadata_priority = 10
fast_track = ${IRONIC_FAST_TRACK:-false}
EOF
}

agent_conductor_settings() {
  agent_path || return 0
  cat <<EOF

# The deploy "kernel" and "ramdisk" are placeholders: the ISO Ironic builds
# from them carries the kernel command line, which the launcher hands to the
# agent it starts for the host (docs/agent-path.md).
[conductor]
deploy_kernel = file://$1/agent-boot/ipa.kernel
deploy_ramdisk = file://$1/agent-boot/ipa.initramfs
bootloader = file://$1/agent-boot/uefi_esp.img
file_url_allowed_paths = $1/agent-boot${IRONIC_FILE_URL_ALLOWED_PATHS:+,$IRONIC_FILE_URL_ALLOWED_PATHS}

[agent]
deploy_logs_collect = never
# How often Ironic asks the agent whether a command it waits on has finished
# (install_bootloader after the image is written) and, after the agent's soft
# power off, whether the host is off: Ironic's 6 s and 5 s unless set (the
# agent tests' labs ask every second). The power-off wait keeps Ironic's 30 s
# in all before it forces the power off.
command_wait_interval = $IRONIC_AGENT_COMMAND_WAIT_INTERVAL
post_deploy_get_power_state_retry_interval = $IRONIC_AGENT_POWER_OFF_POLL_INTERVAL
post_deploy_get_power_state_retries = $(((30 + IRONIC_AGENT_POWER_OFF_POLL_INTERVAL - 1) / IRONIC_AGENT_POWER_OFF_POLL_INTERVAL))
EOF
}

prepare_agent_boot_files() {
  agent_path || return 0
  local b="$1/agent-boot"
  mkdir -p "$b"
  echo "metalflow test agent: not a kernel" >"$b/ipa.kernel"
  echo "metalflow test agent: not an initramfs" >"$b/ipa.initramfs"
  if [[ ! -s "$b/uefi_esp.img" ]]; then
    command -v mkfs.vfat >/dev/null || die "ironic: mkfs.vfat (Debian dosfstools) is needed for the agent path's ESP image"
    mkfs.vfat -C "$b/uefi_esp.img" 1440 >/dev/null || die "ironic: could not build $b/uefi_esp.img"
  fi
}

prepare_ironic() {
  local d="$STATE/ironic"
  mkdir -p "$d/locks" "$d/tmp" "$d/httpboot" "$d/tftpboot"
  cat >"$d/ironic.conf" <<EOF
# Generated by scripts/stack.sh on every start; edit the script, not this file.
# Ironic's process patches (scripts/ironic-site/sitecustomize.py; 1 = on):
# IRONIC_MEMO_SESSION_HASH=${IRONIC_MEMO_SESSION_HASH:-} IRONIC_SQLITE_POOL=${IRONIC_SQLITE_POOL:-}
[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = metalflow-ironic
state_path = $d
tempdir = $d/tmp
log_file = $LOGS/ironic.log
debug = false
# The hardware types Metal3's ironic-image enables for the BMC schemes BMO
# knows (ipmi://, redfish*://, idrac*://, ilo5-redfish:// which is redfish),
# with the interfaces BMO asks for per scheme (model/bmc-types.ts), plus
# fake-hardware for the tests. Defaults are listed first where the order
# picks one (Ironic takes the hardware type's first enabled one when a
# node names none: ipxe for ipmi, redfish-virtual-media for redfish).
enabled_hardware_types = fake-hardware,redfish,ipmi,idrac
enabled_bios_interfaces = fake,no-bios,redfish,idrac-redfish
enabled_boot_interfaces = fake,ipxe,pxe,redfish-virtual-media,redfish-https,idrac-redfish-virtual-media
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake,direct,ramdisk,custom-agent
enabled_firmware_interfaces = fake,no-firmware,redfish
enabled_inspect_interfaces = fake,no-inspect,redfish,agent,idrac-redfish
enabled_management_interfaces = fake,redfish,noop,ipmitool,idrac-redfish
enabled_network_interfaces = noop
default_network_interface = noop
enabled_power_interfaces = fake,redfish,ipmitool,idrac-redfish
enabled_raid_interfaces = fake,no-raid,redfish,agent,idrac-redfish
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor,redfish,ipmitool,idrac-redfish

[api]
host_ip = $HOST
port = $IRONIC_PORT
$(if [[ -n "$IRONIC_CERT_FILE" ]]; then printf 'enable_ssl_api = true\ncert_file = %s\nkey_file = %s\n' "$IRONIC_CERT_FILE" "$IRONIC_KEY_FILE"; fi)

[conductor]
automated_clean = true
# Ironic's record of a node's power follows the BMC within 30 s instead of
# 60, so a power change made behind its back shows in the host's next power
# check sooner (the demo and the power tests). Each sync visits every node,
# so with a large fleet it costs Ironic CPU: raise it there
# (IRONIC_SYNC_POWER_STATE_INTERVAL; the benchmark does at scale).
sync_power_state_interval = ${IRONIC_SYNC_POWER_STATE_INTERVAL:-30}
# Record what the BMC reports instead of forcing Ironic's state back: whether
# to power a host on again is the host workflow's decision.
force_power_state_during_sync = false
# Ironic's default (true); Metal3's ironic-image sets false (IRONIC_NODE_HISTORY=false
# runs that: test/integration/node-history-off.test.ts). With it off Ironic
# records no node history, and its power sync no longer clears last_error.
node_history = $IRONIC_NODE_HISTORY
check_provision_state_interval = ${IRONIC_CHECK_PROVISION_STATE_INTERVAL:-15}
deploy_callback_timeout = ${IRONIC_CALLBACK_TIMEOUT:-600}
clean_callback_timeout = ${IRONIC_CALLBACK_TIMEOUT:-600}
inspect_wait_timeout = 600
rescue_callback_timeout = 600
service_callback_timeout = 600
power_state_change_timeout = 60
graceful_shutdown_timeout = 15

[database]
connection = sqlite:///$d/ironic.sqlite
# As Metal3's ironic-image: no fsync per commit (SQLite keeps WAL mode, which
# Ironic sets). A killed Ironic loses nothing (the writes are in the kernel's
# page cache); only a machine crash could, and this database is a test
# stack's. Measured at 200 deploys on 1,000 nodes, it moved Ironic's times
# within the run-to-run noise on this disk (docs/benchmarks.md): it is here
# for parity with what Metal3 runs.
sqlite_synchronous = false

# As ironic-image: Ironic's boot files (iPXE scripts, the ISOs it builds or
# copies for virtual media, a live ISO's copy) in http_root, fetched by the
# host or its BMC from http_url (the httpboot service, or the agent launcher).
[deploy]
http_root = $d/httpboot
http_url = http://$HOST:$IRONIC_HTTP_PORT
$(agent_deploy_settings)

[pxe]
tftp_root = $d/tftpboot

[dhcp]
dhcp_provider = none

# Where an agent would call back: a deploy or inspection with the agent interfaces
# (the cancellation tests use them) then waits for a ramdisk that never comes,
# as a real stuck deploy does, instead of failing at once on a missing URL.
[service_catalog]
endpoint_override = $(scheme_of ironic)://$HOST:$IRONIC_PORT

[redfish]
connection_attempts = 3
connection_retry_interval = 2
connect_timeout = 10

# Ironic waits this long between two ipmitool commands to one BMC (default
# 5 s, for slow real BMCs); ipmi_sim on loopback answers at once, and a power
# change is several commands.
[ipmi]
min_command_interval = 1

[oslo_concurrency]
lock_path = $d/locks
$(agent_conductor_settings "$d")
EOF
  prepare_agent_boot_files "$d"
  local dbsync=("$VENV/bin/ironic-dbsync" --config-file "$d/ironic.conf") template
  template=$(ironic_db_template)
  if [[ ! -s "$d/ironic.sqlite" && -n "$template" && -s "$template" ]]; then
    # Test and lab stacks (IRONIC_DB_TEMPLATE=1): the empty database this Ironic's dbsync made before, copied.
    cp "$template" "$d/ironic.sqlite.tmp$$" && mv -f "$d/ironic.sqlite.tmp$$" "$d/ironic.sqlite"
    log "ironic: empty database copied from $template"
  elif [[ ! -s "$d/ironic.sqlite" ]]; then
    log "ironic: creating database schema ($d/ironic.sqlite)"
    "${dbsync[@]}" create_schema >>"$LOGS/ironic.log" 2>&1 || { log_tail ironic 20; die "ironic: ironic-dbsync create_schema failed"; }
    # Kept for the next empty start; only a database whose writes are all in the file (no WAL left over).
    if [[ -n "$template" && ! -s "$d/ironic.sqlite-wal" ]]; then
      mkdir -p "${template%/*}" && cp "$d/ironic.sqlite" "$template.tmp$$" && mv -f "$template.tmp$$" "$template"
    fi
  else
    "${dbsync[@]}" upgrade >>"$LOGS/ironic.log" 2>&1 || { log_tail ironic 20; die "ironic: ironic-dbsync upgrade failed"; }
  fi
}

# IRONIC_DB_TEMPLATE=1 (test and lab stacks): the path of the empty database `ironic-dbsync create_schema` made
# for this venv, kept under .state/ironic-db-templates and shared by every stack of this checkout; empty otherwise.
# `create_schema` costs some 2.4 CPU-s (mostly importing Ironic); a copy of the file it made is the same schema,
# the same alembic revision and the same WAL mode. The name is a hash of Ironic's installed files (the RECORD of
# its dist-info, with each file's hash) and of every package's name and version in the venv, so another Ironic,
# SQLAlchemy, alembic or Python makes (and keeps) a new one.
ironic_db_template() {
  [[ "${IRONIC_DB_TEMPLATE:-}" == 1 ]] || return 0
  local sp record
  for sp in "$VENV"/lib/python3*/site-packages; do :; done
  for record in "$sp"/ironic-*.dist-info/RECORD; do :; done
  [[ -f "$record" ]] || return 0
  printf '%s/ironic-%s.sqlite\n' "$REPO/.state/ironic-db-templates" \
    "$( { cat "$record"; ls -d "$sp"/*.dist-info; } | sha256sum | cut -c1-16)"
}

prepare_httpboot() {
  mkdir -p "$STATE/ironic/httpboot"
}

prepare_sushy() {
  local d="$STATE/sushy"
  mkdir -p "$d/state"
  [[ -f "$SUSHY_SYSTEMS_FILE" ]] || die "sushy: systems file $SUSHY_SYSTEMS_FILE not found"
  # bcrypt cost 4 (the minimum): the emulator checks the hash on every request.
  "$VENV/bin/python" - "$d/htpasswd" "$SUSHY_USERNAME" "$SUSHY_PASSWORD" <<'EOF' || die "sushy: could not write htpasswd (bcrypt missing? run scripts/install.sh)"
import bcrypt, sys
path, user, password = sys.argv[1:4]
try:
    line = open(path).read().strip()
    if line.startswith(user + ":") and bcrypt.checkpw(password.encode(), line.split(":", 1)[1].encode()):
        sys.exit(0)
except (OSError, ValueError):
    pass
with open(path, "w") as f:
    f.write(f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}\n")
EOF
  cat >"$d/sushy.conf" <<EOF
# Generated by scripts/stack.sh on every start (Flask config, Python syntax).
import json as _json
SUSHY_EMULATOR_LISTEN_IP = '$HOST'
SUSHY_EMULATOR_LISTEN_PORT = $SUSHY_PORT
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_FEATURE_SET = 'full'
SUSHY_EMULATOR_AUTH_FILE = '$d/htpasswd'
# Power/boot/vmedia state of the fake systems; default would be shared /tmp.
SUSHY_EMULATOR_STATE_DIR = '$d/state'
SUSHY_EMULATOR_FAKE_POWER_DELAY = (${SUSHY_POWER_DELAY%-*}, ${SUSHY_POWER_DELAY#*-})
$(if [[ -n "${SUSHY_EXTERNAL_NOTIFICATION_URL:-}" ]]; then printf "EXTERNAL_NOTIFICATION_URL = '%s'\n" "$SUSHY_EXTERNAL_NOTIFICATION_URL"; fi)
$(if [[ -n "$SUSHY_SSL_CERT" ]]; then printf "SUSHY_EMULATOR_SSL_CERT = '%s'\nSUSHY_EMULATOR_SSL_KEY = '%s'\n" "$SUSHY_SSL_CERT" "$SUSHY_SSL_KEY"; fi)
with open('$SUSHY_SYSTEMS_FILE') as _f:
    SUSHY_EMULATOR_FAKE_SYSTEMS = _json.load(_f)
EOF
}

command_of() {
  case "$1" in
    temporal)
      local sa=() unset_args=() pragmas=() p
      mapfile -t sa < <(search_attribute_args)
      # WAL with synchronous=normal survives a killed server (only an OS crash
      # can lose the last commits) and spares an fsync per history write, which
      # is most of the dev server's cost at fleet scale.
      for p in ${TEMPORAL_SQLITE_PRAGMAS-journal_mode=wal synchronous=normal}; do pragmas+=(--sqlite-pragma "$p"); done
      # An operation's first activity goes back with the workflow task's reply
      # to the worker that completed it, skipping a round through matching.
      pragmas+=(--dynamic-config-value system.enableActivityEagerExecution=true)
      # One partition per task queue instead of Temporal's 4 (matching.numTaskqueueReadPartitions and
      # WritePartitions, the same keys on a production server, per task queue there): with one worker
      # process a task written to a partition no poller waits on is backlogged (a database write) or
      # forwarded to the root partition, each a delay for a burst of new hosts' first tasks.
      local parts="${TEMPORAL_TASKQUEUE_PARTITIONS:-1}"
      pragmas+=(--dynamic-config-value "matching.numTaskqueueReadPartitions=$parts" --dynamic-config-value "matching.numTaskqueueWritePartitions=$parts")
      # Worker Deployments need no setting on this server; the tests and the benchmark make one per run
      # (Temporal's default allows 100 per namespace) and a stack outlives many runs.
      pragmas+=(--dynamic-config-value matching.maxDeployments=100000)
      # start-dev reads the search attributes' definitions from its database at every request that names one
      # (its default, so that attributes added at run time show at once): some 10 % of its CPU per workflow task
      # and a third of a describe's. A database it creates gets every attribute from the flags above, so the
      # definitions cannot change under it: it keeps them cached. An existing one may get some from
      # ensure_search_attributes after the start: it reads them afresh, as the default does.
      if [[ ! -s "$STATE/temporal.db" ]]; then pragmas+=(--dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false); fi
      mapfile -t unset_args < <(temporal_env_unset)
      # What a run asks Temporal for (service_requests by operation), when asked for.
      if [[ -n "${TEMPORAL_METRICS_PORT:-}" ]]; then pragmas+=(--metrics-port "$TEMPORAL_METRICS_PORT"); fi
      CMD=(env "${unset_args[@]}" "$VENV/bin/temporal" server start-dev
        --db-filename "$STATE/temporal.db" --ip "$HOST"
        --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT"
        --namespace default --log-level warn "${sa[@]}" "${pragmas[@]}") ;;
    ironic)
      CMD=("$VENV/bin/ironic" --config-file "$STATE/ironic/ironic.conf")
      # Test and lab stacks: the Redfish driver's PBKDF2 of the same BMC password computed once, and a pool of
      # SQLite connections instead of one per database session (the file says why; each has its own setting).
      if [[ "${IRONIC_MEMO_SESSION_HASH:-}" == 1 || "${IRONIC_SQLITE_POOL:-}" == 1 ]]; then
        CMD=(env "PYTHONPATH=$REPO/scripts/ironic-site${PYTHONPATH:+:$PYTHONPATH}"
          "IRONIC_MEMO_SESSION_HASH=${IRONIC_MEMO_SESSION_HASH:-}" "IRONIC_SQLITE_POOL=${IRONIC_SQLITE_POOL:-}" "${CMD[@]}")
      fi ;;
    sushy)
      CMD=("$VENV/bin/python" "$REPO/scripts/sushy_emulator.py" --config "$STATE/sushy/sushy.conf") ;;
    httpboot)
      # ironic-image runs httpd on http_root; Python's threading server is enough for one machine's hosts.
      CMD=("$VENV/bin/python" -m http.server "$IRONIC_HTTP_PORT" --bind "$HOST" --directory "$STATE/ironic/httpboot") ;;
  esac
}
