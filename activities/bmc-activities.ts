/**
 * Activities that speak to BMCs directly (Redfish, IPMI): the enrollment
 * pre-flight, fast out-of-band inspection and power. Credentials are read
 * from the secret store at the moment of use. Every BMC error becomes an
 * operation failure whose message names the cause (DNS, refused, TLS, 401,
 * unknown system), so the host records it and retries with visible backoff.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { parseBmcAddress, type BmcAccess } from '../types/bmc';
import { FAILURE } from '../types/failures';
import type { HardwareDetails, HostRef, HostSpec } from '../types/host';
import { activityContext } from './activity-context';
import { checkBmc, isBmcError, openBmc, type BmcClient, type PowerState } from './bmc/bmc-client';
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

  async function withBmc<R>(t: BmcTarget, fn: (bmc: BmcClient) => Promise<R>): Promise<R> {
    try {
      const bmc = await openBmc(access(t.spec), await credentials(t), {
        disableCertificateVerification: t.spec.bmc.disableCertificateVerification,
        timeoutMs,
      });
      try {
        return await fn(bmc);
      } finally {
        await bmc.close().catch(() => undefined);
      }
    } catch (err) {
      return translate(err);
    }
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

  /** Inventory straight from the BMC, in seconds (Redfish only). */
  async function inspectBmc(t: BmcTarget): Promise<{ hardware: HardwareDetails }> {
    return withBmc(t, async (bmc) => {
      if (!bmc.getInventory) {
        throw ApplicationFailure.nonRetryable(`BMC type ${access(t.spec).type} cannot be inspected out of band; use agent inspection`, FAILURE.operationFailed);
      }
      return { hardware: await bmc.getInventory() };
    });
  }

  async function bmcSetPower(t: BmcTarget & { on: boolean }): Promise<{ poweredOn: boolean }> {
    return withBmc(t, async (bmc) => {
      await bmc.setPower(t.on ? 'on' : 'off', { onPoll: () => activityContext()?.heartbeat() });
      return { poweredOn: t.on };
    });
  }

  return { preflightBmc, inspectBmc, bmcSetPower };
}

export type BmcActivities = ReturnType<typeof createBmcActivities>;
