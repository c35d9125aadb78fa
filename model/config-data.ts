/**
 * The config-drive data a host boots with: `networkData` and `metaData` (a
 * JSON or YAML mapping: Metal3 reads them with `yaml.Unmarshal`, and CAPM3's
 * Metal3Data renders them as YAML) and free-form `userData`. The API checks
 * the values it is sent inline; the worker parses what it reads from a Secret
 * with the same function. Not imported by workflows: the `yaml` library stays
 * out of the workflow bundle.
 *
 * Reasons never quote the value (user, network and meta data are secrets):
 * they give the YAML error, its line and column.
 */
import { parseAllDocuments } from 'yaml';
import type { FieldError } from './field-error';

/** The config drive's content, as Ironic's `configdrive` takes it and the direct provisioner writes it. */
export interface ConfigDriveData {
  meta_data: Record<string, unknown>;
  user_data?: string;
  network_data?: Record<string, unknown>;
}

const OPTIONS = { schema: 'core', uniqueKeys: true, maxAliasCount: 100, prettyErrors: false, logLevel: 'silent' } as const;

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

/** Plain JSON values only: a YAML type such as !!binary or !!set has no JSON form for the config drive. */
function isJson(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJson);
  return typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype && Object.values(v).every(isJson);
}

function kindOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : `a ${typeof v}`;
}

/** One YAML (JSON is YAML) document as JSON data, or why it is not one. */
function parseDocument(text: string): { value: unknown } | { reason: string } {
  const docs = parseAllDocuments(text, OPTIONS);
  if (!Array.isArray(docs) || docs.length === 0) return { value: null };
  if (docs.length > 1) return { reason: `holds ${docs.length} YAML documents; give one` };
  const doc = docs[0]!;
  const error = doc.errors[0];
  if (error) return { reason: `is neither valid JSON nor valid YAML: ${error.message} (${error.code}) at ${lineColumn(text, error.pos[0])}` };
  const warning = doc.warnings[0];
  if (warning) return { reason: `is not plain JSON or YAML: ${warning.message} at ${lineColumn(text, warning.pos[0])}` };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch {
    return { reason: 'uses a YAML alias that names no anchor, or expands too many aliases' };
  }
  if (!isJson(value)) return { reason: 'uses a YAML type that has no JSON form (e.g. !!binary, !!set)' };
  return { value };
}

/** `networkData` / `metaData`: a JSON object or a YAML mapping, as the config drive's network_data / meta_data. */
export function parseConfigMapping(text: string): { value: Record<string, unknown> } | { reason: string } {
  if (text.trim() === '') return { reason: 'is empty; leave it out, or give a JSON object or a YAML mapping' };
  const parsed = parseDocument(text);
  if ('reason' in parsed) return parsed;
  const v = parsed.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    return { reason: `must be a mapping (a JSON object or YAML key: value pairs), not ${kindOf(v)}` };
  }
  return { value: v as Record<string, unknown> };
}

/**
 * `userData` is free-form, as cloud-init reads many formats (scripts, MIME multipart,
 * #include, boothooks, Ignition JSON). Checked: it is not empty; `#cloud-config` must be
 * YAML that is a mapping (or nothing); a document that starts with '{' (Ignition, JSON
 * cloud-config) must be valid JSON. Anything else passes as it is.
 */
export function userDataProblem(text: string): string | undefined {
  if (text.trim() === '') return 'is empty; leave it out, or give cloud-init user data (e.g. #cloud-config) or an Ignition config';
  const first = text.trimStart();
  if (/^#cloud-config[ \t]*(\r?\n|$)/.test(first)) {
    const parsed = parseDocument(first);
    if ('reason' in parsed) return `starts with #cloud-config but ${parsed.reason}`;
    const v = parsed.value;
    if (v !== null && (typeof v !== 'object' || Array.isArray(v))) return `starts with #cloud-config, so must be a YAML mapping, not ${kindOf(v)}`;
    return undefined;
  }
  if (first.startsWith('{')) {
    try {
      JSON.parse(first);
    } catch {
      return "starts with '{' so is read as JSON (an Ignition config or JSON cloud-config), but is not valid JSON";
    }
  }
  return undefined;
}

/** The request's inline config data, each checked; errors name the request field. */
export function inlineConfigDataErrors(input: { userData?: string; networkData?: string; metaData?: string }): FieldError[] {
  const errors: FieldError[] = [];
  if (input.userData !== undefined) {
    const reason = userDataProblem(input.userData);
    if (reason) errors.push({ field: 'userData', reason });
  }
  for (const key of ['networkData', 'metaData'] as const) {
    const text = input[key];
    if (text === undefined) continue;
    const parsed = parseConfigMapping(text);
    if ('reason' in parsed) errors.push({ field: key, reason: parsed.reason });
  }
  return errors;
}
