/**
 * A BareMetalHost status as Metal3's operator writes it, read the way its Go
 * code reads it: JSON null and omitted fields are zero values (its
 * operationHistory carries `"start": null`), and an image with an empty URL
 * (`{"url": ""}`, written on every host that runs none) is no image.
 */

/** JSON null is Go's zero value: drop it, as Metal3's decoding does. */
export function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]));
}

export function metal3StatusAsGoReads(json: unknown): unknown {
  const v = withoutNulls(json);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const st = v as Record<string, unknown>;
  const history = (typeof st.operationHistory === 'object' && st.operationHistory !== null ? st.operationHistory : {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {
    errorMessage: '',
    errorCount: 0,
    poweredOn: false,
    ...st,
    operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {}, ...history },
  };
  const prov = out.provisioning as { image?: { url?: unknown } } | undefined;
  if (prov && typeof prov === 'object' && prov.image && prov.image.url === '') {
    const { image: _empty, ...rest } = prov;
    out.provisioning = rest;
  }
  return out;
}
