/**
 * Fits what metalflow observed (a BMC's inventory, Ironic's error text) to the
 * string limits of the schema it is written under, so a place that enforces
 * them (the CRD's status, HardwareData, a status handed to a new workflow run)
 * never refuses metalflow's own write. Input from callers is refused instead;
 * this is only for values metalflow did not choose.
 */
import type { TSchema } from '@sinclair/typebox';

const CUT = '…';

/** A copy of `value` with every string longer than its schema's maxLength cut to fit, ending in '…'. */
export function fitStrings<T>(schema: TSchema, value: T): T {
  return fit(schema, value) as T;
}

function fit(schema: TSchema, value: unknown): unknown {
  if (typeof value === 'string') {
    const max = schema.maxLength as number | undefined;
    return max !== undefined && value.length > max ? value.slice(0, max - CUT.length) + CUT : value;
  }
  if (Array.isArray(value)) {
    const items = schema.items as TSchema | undefined;
    return items ? value.map((v) => fit(items, v)) : value;
  }
  if (typeof value === 'object' && value !== null) {
    const member = (schema.anyOf as TSchema[] | undefined)?.find((m) => m.type === 'object');
    const props = ((member ?? schema).properties ?? {}) as Record<string, TSchema>;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, props[k] ? fit(props[k], v) : v]));
  }
  return value;
}
