# Sourced by scripts/demo.sh and scripts/demo-k8s.sh: the demos' payload key
# ring and admin token (made once under $METALFLOW_STATE_DIR, 0600), and the
# codec server that decodes payloads for the Temporal CLI, with the env file
# a user sources to use it (docs/getting-started.md).

# Exports METALFLOW_PAYLOAD_KEYS_FILE, METALFLOW_API_TOKEN_FILE, METALFLOW_API_TOKENS_FILE.
demo_keys_and_token() {
  # Payload encryption: every process of a demo shares one key ring (docs/security.md, *Payload encryption and the codec server*).
  export METALFLOW_PAYLOAD_KEYS_FILE=${METALFLOW_PAYLOAD_KEYS_FILE:-$METALFLOW_STATE_DIR/payload.keys}
  if [ ! -f "$METALFLOW_PAYLOAD_KEYS_FILE" ]; then
    (umask 077 && echo "demo-$(date +%Y%m%d):$(head -c 32 /dev/urandom | base64 -w0)" >"$METALFLOW_PAYLOAD_KEYS_FILE")
  fi
  # The API and the codec server refuse to start without credentials: one admin token, its hash in the tokens file.
  export METALFLOW_API_TOKEN_FILE=$METALFLOW_STATE_DIR/api-token
  export METALFLOW_API_TOKENS_FILE=$METALFLOW_STATE_DIR/api-tokens
  if [ ! -s "$METALFLOW_API_TOKEN_FILE" ]; then
    (umask 077; head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$METALFLOW_API_TOKEN_FILE")
  fi
  (umask 077; printf 'sha256:%s demo admin:*\n' "$(tr -d '\n' <"$METALFLOW_API_TOKEN_FILE" | sha256sum | cut -d' ' -f1)" >"$METALFLOW_API_TOKENS_FILE")
}

# Starts the codec server (pid and log in $1) unless one of the demos' already answers on
# METALFLOW_CODEC_PORT (8089: the image cache has 8081), then writes the CLI's env file.
# Sets CODEC_URL and CLI_ENV.
demo_start_codec() {
  local run=$1
  export METALFLOW_CODEC_PORT=${METALFLOW_CODEC_PORT:-8089}
  CODEC_URL=http://127.0.0.1:$METALFLOW_CODEC_PORT
  CLI_ENV=$METALFLOW_STATE_DIR/temporal-cli.env
  # 401 to a request without a token: a codec server of this state dir's key ring and tokens.
  codec_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$CODEC_URL/decode")" = 401 ]; }
  if codec_up; then
    echo "codec server already answering on $CODEC_URL"
  elif (exec 3<>"/dev/tcp/127.0.0.1/$METALFLOW_CODEC_PORT") 2>/dev/null; then
    echo "error: port $METALFLOW_CODEC_PORT (codec server) is in use by another program; set METALFLOW_CODEC_PORT" >&2
    return 1
  else
    # Its own session: a Ctrl-C in the terminal reaches the demo script, which stops it.
    setsid node --import tsx api/codec-main.ts >"$run/codec.log" 2>&1 &
    echo $! >"$run/codec.pid"
    echo "started codec (pid $!, log $run/codec.log)"
    for _ in $(seq 1 60); do
      codec_up && break
      if ! kill -0 "$(cat "$run/codec.pid")" 2>/dev/null; then echo "error: the codec server exited; its log:" >&2; tail -20 "$run/codec.log" >&2; return 1; fi
      sleep 0.5
    done
  fi
  bash scripts/temporal-cli-env.sh >"$CLI_ENV"
}

# The two ways to point the Temporal CLI at the codec server (paths relative to the repository).
demo_print_cli() {
  local root=$1
  cat <<TEXT
  Temporal CLI: source ${CLI_ENV#"$root"/}   (PATH, TEMPORAL_ADDRESS and the codec server: payloads print decoded)
                then e.g.: temporal workflow query -w $2 --type host
                or by flags: --codec-endpoint $CODEC_URL --codec-auth "Bearer \$(cat ${METALFLOW_API_TOKEN_FILE#"$root"/})"
TEXT
}
