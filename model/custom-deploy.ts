/**
 * Metal3's `spec.customDeploy`: `{method: "<deploy step>"}` provisions the
 * host with Ironic's custom-agent deploy interface running that step in the
 * agent, with or without an image. An empty method (or `{}`, null) asks for
 * nothing, as in Metal3. Pure, bundled into workflows.
 */
import type { FieldError } from './field-error';
import type { HostSpec } from './host';

/** The custom deploy step the spec asks for, or undefined. */
export function customDeployMethod(spec: HostSpec | undefined): string | undefined {
  const method = spec?.customDeploy?.method;
  return method ? method : undefined;
}

/** The method must name a deploy step (the schema has checked it is a string). */
export function customDeployErrors(spec: HostSpec): FieldError[] {
  const method = spec.customDeploy?.method;
  if (method === undefined || /^[A-Za-z0-9_.-]*$/.test(method)) return [];
  return [{ field: 'spec.customDeploy.method', reason: 'must be a deploy step name (letters, digits, "_", "." or "-"), e.g. install_coreos' }];
}
