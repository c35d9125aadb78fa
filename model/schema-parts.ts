/**
 * The pieces the host schemas (host.ts, host-hardware.ts) are built from:
 * string limits, closed objects, and the pass-through object for fields
 * metalflow keeps without acting on. A module of their own so both schema
 * modules import them without importing each other.
 */
import { Type } from '@sinclair/typebox';

/** Objects of the host model reject unknown fields. */
export const open = { additionalProperties: false } as const;

/**
 * String limits. Kubernetes' where a value is a Kubernetes name, Ironic's where Ironic
 * keeps it, otherwise what such a value needs with room to spare; every string has one,
 * so no field of a spec, a status annotation or an API body is unbounded.
 */
export const MAX_LENGTH = {
  /** Kubernetes object names (DNS-1123 subdomain), host names. */
  name: 253,
  /** Namespaces, kinds (DNS-1123 label). */
  label: 63,
  /** A group (253) '/' a version (63). */
  apiVersion: 317,
  /** UIDs, resourceVersions, Ironic UUIDs, timestamps. */
  id: 128,
  /** Short tokens: architecture, profile, HCTL, MAC and IP addresses, PCI addresses, CPU flags. */
  word: 64,
  /** Inventory strings (vendor, model, serial number, WWN): Ironic's column size. */
  text: 255,
  /** Device paths (/dev/disk/by-path/...), Kubernetes field paths. */
  path: 1024,
  /** Ironic's node description limit. */
  description: 4096,
  /** The last error: Metal3's condition message limit. */
  message: 32768,
} as const;

/** A string no longer than `maxLength` (see MAX_LENGTH). */
export const str = (maxLength: number, extra: Record<string, unknown> = {}) => Type.String({ maxLength, ...extra });

/** Fields Metal3 accepts that metalflow stores but does not act on yet. */
export const passThrough = Type.Object({}, { additionalProperties: true });
