/**
 * Activities that speak to BMCs directly (Redfish, IPMI): for now the
 * enrollment pre-flight. Credentials are read
 * from the secret store at the moment of use. Every BMC error becomes an
 * operation failure whose message names the cause (DNS, refused, TLS, 401,
 * unknown system), so the host records it and retries with visible backoff.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { parseBmcAddress, type BmcAccess } from '../types/bmc';
import { FAILURE } from '../types/failures';
import type { HostRef, HostSpec } from '../types/host';
import { checkBmc, isBmcError, type PowerState } from './bmc/bmc-client';
import { readSecretKey, type SecretReader } from './secrets/secret-store';

export interface BmcActivityDeps {
  secrets: SecretReader;
  /** Per BMC request; default 10 s. */
  timeoutMs?: number;
}

export interface BmcTarget {
  ref: HostRef;
  spec: HostSpec;
}

function access(spec: HostSpec): BmcAccess {
  const parsed = parseBmcAddress(spec.bmc.address);
  if (!parsed.ok) throw ApplicationFailure.nonRetryable(parsed.errors.map((e) => `${e.field}: ${e.reason}`).join('; '), FAILURE.operationFailed);
  return parsed.value;
}

function translate(err: unknown): never {
  if (isBmcError(err)) throw ApplicationFailure.nonRetryable(err.message, FAILURE.operationFailed, { kind: err.kind });
  throw err;
}

export function createBmcActivities(deps: BmcActivityDeps) {
  const timeoutMs = deps.timeoutMs ?? 10_000;

  async function credentials(t: BmcTarget) {
    const name = t.spec.bmc.credentialsName;
    return {
      username: await readSecretKey(deps.secrets, t.ref.namespace, name, ['username']),
      password: await readSecretKey(deps.secrets, t.ref.namespace, name, ['password']),
    };
  }

  /** Reachable, credentials accepted, system exists: before Ironic is touched. */
  async function preflightBmc(t: BmcTarget): Promise<{ power: PowerState }> {
    try {
      const power = await checkBmc(access(t.spec), await credentials(t), {
        disableCertificateVerification: t.spec.bmc.disableCertificateVerification,
        timeoutMs,
      });
      return { power };
    } catch (err) {
      return translate(err);
    }
  }

  return { preflightBmc };
}

export type BmcActivities = ReturnType<typeof createBmcActivities>;
