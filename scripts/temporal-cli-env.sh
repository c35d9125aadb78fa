#!/usr/bin/env bash
# Prints an env file for the Temporal CLI against a running demo: its address,
# the project's `temporal` first on PATH, and the codec server with the demo's
# token, so `temporal workflow show/query/list` print payloads decoded. The
# token is read from its file when the env file is sourced, never copied.
#   bash scripts/temporal-cli-env.sh > .state/stack/temporal-cli.env
# Needs TEMPORAL_ADDRESS, METALFLOW_CODEC_PORT and METALFLOW_API_TOKEN_FILE;
# TEMPORAL_NAMESPACE when it is not "default".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${TEMPORAL_ADDRESS:?}" "${METALFLOW_CODEC_PORT:?}" "${METALFLOW_API_TOKEN_FILE:?}"
q() { printf '%q' "$1"; }
cat <<ENV
# source this file: the Temporal CLI against the demo, payloads decoded by its codec server
export PATH=$(q "$ROOT/.venv/bin"):"\$PATH"
export TEMPORAL_ADDRESS=$(q "$TEMPORAL_ADDRESS")
export TEMPORAL_NAMESPACE=$(q "${TEMPORAL_NAMESPACE:-default}")
export TEMPORAL_CODEC_ENDPOINT=$(q "http://127.0.0.1:$METALFLOW_CODEC_PORT")
export TEMPORAL_CODEC_AUTH="Bearer \$(cat $(q "$METALFLOW_API_TOKEN_FILE"))"
ENV
