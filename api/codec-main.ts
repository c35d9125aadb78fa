/** The codec server process: `npm run codec-server` (see docs/security.md, *Payload encryption and the codec server*). */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/env';
import { EncryptionCodec } from '../clients/temporal/payload-codec';
import { parsePayloadKeys } from '../clients/temporal/payload-keys';
import { TokenFile } from './auth/token-file';
import { reloadTokensOnChange } from './auth/token-reload';
import { createCodecServer } from './codec-server';
import { isLoopback } from './auth/options';

const config = loadConfig();
const need = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required by the codec server`);
  return v;
};
const keysFile = config.payloadKeysFile ?? need('METALFLOW_PAYLOAD_KEYS_FILE');
const codec = new EncryptionCodec(parsePayloadKeys(readFileSync(keysFile, 'utf8'), keysFile));
const tokensFile = need('METALFLOW_API_TOKENS_FILE');
const tokens = TokenFile.load(tokensFile);
const line = (level: string) => (fields: object, msg: string) => console.log(JSON.stringify({ level, msg, ...fields }));
reloadTokensOnChange(tokens, tokensFile, { info: line('info'), error: line('error') });
const host = process.env.METALFLOW_CODEC_HOST ?? '127.0.0.1';
const port = Number(process.env.METALFLOW_CODEC_PORT ?? 8089);
if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`METALFLOW_CODEC_PORT: ${process.env.METALFLOW_CODEC_PORT} is not a port (1-65535)`);
// Plain HTTP carries bearer tokens and decoded payloads: only on loopback (put TLS in front otherwise).
if (!isLoopback(host)) throw new Error(`METALFLOW_CODEC_HOST ${host}: the codec server speaks plain HTTP and listens on loopback only`);
const corsOrigins = (process.env.METALFLOW_CODEC_CORS_ORIGINS ?? new URL(config.temporalUiUrl).origin).split(',').map((s) => s.trim()).filter(Boolean);
createCodecServer({ codec, tokens, corsOrigins }).listen(port, host, () => {
  console.log(`metalflow codec server on http://${host}:${port} (POST /decode, /encode), CORS for ${corsOrigins.join(', ')}`);
});
